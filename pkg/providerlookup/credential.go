/*
Copyright 2026 The paymentjob-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package providerlookup

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
)

// readCredential reads pp's credential with the operator's own rules
// (providercache.ReadCredential: the Secret must carry the credentials
// label and a value at the key), and says which Secret and why when it
// cannot. An error of the API server is wrapped, never replaced.
func readCredential(ctx context.Context, c client.Reader, pp *paymentsv1alpha1.PaymentProvider) (string, error) {
	ref := providercache.SecretRef(pp)
	if ref == nil {
		return "", nil
	}
	if c == nil {
		return "", fmt.Errorf("cannot read Secret %s/%s: no client", pp.Namespace, ref.Name)
	}
	reader := &recordingReader{Reader: c}
	credential, err := providercache.ReadCredential(ctx, reader, pp)
	switch {
	case err == nil:
		return credential, nil
	case errors.Is(err, providercache.ErrNoCredentials) && apierrors.IsNotFound(reader.err):
		return "", fmt.Errorf("cannot read the credential of PaymentProvider %s/%s: Secret %s/%s: %w: %w",
			pp.Namespace, pp.Name, pp.Namespace, ref.Name, ErrNoCredentials, reader.err)
	case errors.Is(err, providercache.ErrNoCredentials):
		return "", fmt.Errorf("cannot read the credential of PaymentProvider %s/%s: %w: Secret %s/%s lacks the label %s: \"true\"",
			pp.Namespace, pp.Name, ErrNoCredentials, pp.Namespace, ref.Name, paymentsv1alpha1.LabelCredentials)
	case errors.Is(err, providercache.ErrCredentialKeyMissing):
		return "", fmt.Errorf("cannot read the credential of PaymentProvider %s/%s: %w: Secret %s/%s has no non-empty key %q",
			pp.Namespace, pp.Name, ErrNoCredentials, pp.Namespace, ref.Name, ref.Key)
	default:
		// ReadCredential names the Secret.
		return "", fmt.Errorf("cannot read the credential of PaymentProvider %s/%s: %w", pp.Namespace, pp.Name, err)
	}
}

// recordingReader keeps the error of the last Get, which ReadCredential
// folds into ErrNoCredentials for a Secret that does not exist.
type recordingReader struct {
	client.Reader
	err error
}

// Get gets obj and records the error.
func (r *recordingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	r.err = r.Reader.Get(ctx, key, obj, opts...)
	return r.err
}

// minRedacted is the shortest credential that is cut out of errors: a
// shorter one would cut ordinary words, and no real credential is that
// short.
const minRedacted = 8

// redact returns err with every occurrence of credential in its message
// replaced. The adapters never put the credential in an error; this holds
// even if a provider echoed it back.
func redact(err error, credential string) error {
	if err == nil || len(credential) < minRedacted || !strings.Contains(err.Error(), credential) {
		return err
	}
	return &redactedError{msg: strings.ReplaceAll(err.Error(), credential, "[REDACTED]"), err: err}
}

// redactedError is an error whose message has the credential cut out; it
// unwraps to the original for errors.Is and errors.As.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }

func (e *redactedError) Unwrap() error { return e.err }
