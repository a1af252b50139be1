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

package campaign

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// The model: what the campaign knows the world should be. It holds every
// manifest a user ever applied (GitOps keeps them after a prune), and from
// them which requests may have moved money under which key; the oracle
// (oracle_test.go) compares it with the three books.

// The kinds of objects the campaign makes.
const (
	kindJob    = "PaymentJob"
	kindRefund = "PaymentRefund"
)

// jobManifest is a PaymentJob as a user applied it.
type jobManifest struct {
	ns, name string
	// key is spec.idempotencyKey, empty for the name.
	key    string
	amount int64
	// suspend is spec.suspend: the job waits for a person's approval.
	suspend bool
	// scope is the key scope of its namespace's PaymentProvider
	// (spec.keyScope), which the key it sends carries.
	scope string
}

// sentKey is the key the job sends to the provider.
func (j jobManifest) sentKey() string {
	k := j.key
	if k == "" {
		k = j.name
	}
	return payment.ScopedKey(j.scope, j.ns, k)
}

// object is the PaymentJob of the manifest.
func (j jobManifest) object() *paymentsv1alpha1.PaymentJob {
	return &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: j.name, Namespace: j.ns},
		Spec: paymentsv1alpha1.PaymentJobSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: providerName},
			Amount: j.amount, Currency: currency, PaymentMethod: "pm_card_visa", IdempotencyKey: j.key,
			Description: "campaign", BackoffLimit: ptr.To[int32](6), Suspend: ptr.To(j.suspend)},
	}
}

// refundManifest is a PaymentRefund as a user applied it.
type refundManifest struct {
	ns, name, job string
	// amount is spec.amount, nil for the whole charge.
	amount *int64
}

// object is the PaymentRefund of the manifest.
func (r refundManifest) object() *paymentsv1alpha1.PaymentRefund {
	return &paymentsv1alpha1.PaymentRefund{
		ObjectMeta: metav1.ObjectMeta{Name: r.name, Namespace: r.ns},
		Spec: paymentsv1alpha1.PaymentRefundSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: providerName},
			PaymentJobRef: paymentsv1alpha1.PaymentJobReference{Name: r.job}, Amount: r.amount,
			Reason: paymentsv1alpha1.RefundRequestedByCustomer, BackoffLimit: ptr.To[int32](6)},
	}
}

// model is what the campaign knows.
type model struct {
	jobs    []jobManifest
	refunds []refundManifest
	// dashboard counts the refunds made at the provider behind the
	// operator's back, to key them.
	dashboard int
	// behind is the rest of what was done at the provider behind the
	// operator's back (actions_money_test.go).
	behind behind
	// keys counts the credentials written into Secrets after the first,
	// to number them.
	keys int
	// forgotten are the keys the provider forgot while the ledger held no
	// outcome under them: nothing remembers those payments, and another
	// object sending the key again is charged again, as docs/providers.md
	// (Key retention) says (the campaign's providers never look a key up
	// before a first charge).
	forgotten map[string]bool
	// unrecorded are the keys the provider forgot while only a finished
	// object held their outcome (the ledger had not recorded it yet):
	// another manifest sending the key is charged again, for a new object
	// looks in the ledger only.
	unrecorded map[string]bool
}

// manifestsSending are the job manifests that send key.
func (m *model) manifestsSending(key string) []jobManifest {
	var found []jobManifest
	for _, j := range m.jobs {
		if j.sentKey() == key {
			found = append(found, j)
		}
	}
	return found
}

// sharedKey reports whether key is sent by manifests asking for different
// requests (another amount, or another name under the same key): their
// outcomes are then not each one's own.
func (m *model) sharedKey(key string) bool {
	names := map[string]bool{}
	for _, j := range m.manifestsSending(key) {
		names[j.ns+"/"+j.name] = true
	}
	// A key someone else charged under is shared with them.
	return len(names) > 1 || m.behind.chargedOutside(key)
}

// ref names an object of the cluster.
type ref struct {
	kind string
	key  types.NamespacedName
}

func (r ref) String() string { return r.kind + " " + r.key.String() }

// objects are the payment objects the API server holds, in a stable order.
func (w *world) objects(ctx context.Context) ([]ref, error) {
	var jobs paymentsv1alpha1.PaymentJobList
	if err := w.store.List(ctx, &jobs); err != nil {
		return nil, fmt.Errorf("cannot list jobs: %w", err)
	}
	var refunds paymentsv1alpha1.PaymentRefundList
	if err := w.store.List(ctx, &refunds); err != nil {
		return nil, fmt.Errorf("cannot list refunds: %w", err)
	}
	refs := make([]ref, 0, len(jobs.Items)+len(refunds.Items))
	for i := range jobs.Items {
		refs = append(refs, ref{kindJob, client.ObjectKeyFromObject(&jobs.Items[i])})
	}
	for i := range refunds.Items {
		refs = append(refs, ref{kindRefund, client.ObjectKeyFromObject(&refunds.Items[i])})
	}
	slices.SortFunc(refs, func(a, b ref) int {
		if a.kind != b.kind {
			if a.kind < b.kind {
				return -1
			}
			return 1
		}
		if a.key.String() < b.key.String() {
			return -1
		}
		if a.key.String() > b.key.String() {
			return 1
		}
		return 0
	})
	return refs, nil
}

// newObject is an empty object of kind.
func (w *world) newObject(kind string) client.Object {
	if kind == kindRefund {
		return &paymentsv1alpha1.PaymentRefund{}
	}
	return &paymentsv1alpha1.PaymentJob{}
}
