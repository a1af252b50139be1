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

package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/providerlookup"
)

// What status and refund ask the provider, read-only (--check-provider),
// and why they could not.

// envInsecureHosts is the environment variable that gives
// --insecure-provider-hosts its default: hosts, comma-separated, that
// --check-provider may call over plain http (a sandbox on 127.0.0.1).
const envInsecureHosts = "KUBECTL_PAYMENTS_INSECURE_PROVIDER_HOSTS"

// addInsecureHosts adds --insecure-provider-hosts to cmd, whose default
// is envInsecureHosts.
func addInsecureHosts(cmd *cobra.Command, v *[]string) {
	var hosts []string
	for h := range strings.SplitSeq(os.Getenv(envInsecureHosts), ",") {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	cmd.Flags().StringSliceVar(v, "insecure-provider-hosts", hosts, "Hosts --check-provider may call over plain http "+
		"(a sandbox on 127.0.0.1), as the manager's flag of that name lets the operator; default $"+envInsecureHosts)
}

func (o *statusOptions) providerCheck(ctx context.Context, c client.Client, ns string, s *Story, st *paymentsv1alpha1.PaymentStatus) *ProviderCheck {
	key := s.IdempotencyKey
	if s.Kind == string(kindRefund) {
		key = s.chargeKey
	}
	check := &ProviderCheck{Key: key}
	if key == "" {
		check.Error = "no idempotency key to look up yet: the payment was never sent"
		return check
	}
	var pp paymentsv1alpha1.PaymentProvider
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: s.ProviderRef}, &pp); err != nil {
		check.Error = classify(err, fmt.Sprintf("PaymentProvider %s/%s", ns, s.ProviderRef)).Error() +
			fmt.Sprintf("; ask the provider yourself under the key %s", key)
		return check
	}
	opts := providerlookup.Options{InsecureHosts: o.insecureHosts}
	charges, err := providerlookup.Lookup(ctx, c, &pp, key, opts)
	if err != nil {
		check.Error = lookupError(err, &pp).Error()
		return check
	}
	check.Charges = charges
	check.Warnings, check.lagging = o.warnings(ctx, c, &pp, s, st, opts)
	return check
}

// warnings say when what the provider answers may not be the payment's
// whole truth: another account, or a charge too recent for its search
// (lagging: only a charge it does not show may be missing).
func (o *statusOptions) warnings(ctx context.Context, c client.Client, pp *paymentsv1alpha1.PaymentProvider, s *Story,
	st *paymentsv1alpha1.PaymentStatus, opts providerlookup.Options) (warnings []string, lagging bool) {
	if id := st.Provider; id != nil {
		if id.UID != "" && id.UID != string(pp.UID) {
			warnings = append(warnings, fmt.Sprintf("PaymentProvider %s was replaced since the payment was sent (uid %s, now %s)",
				pp.Name, id.UID, pp.UID))
		}
		if id.Account != "" {
			switch account, err := providerlookup.Account(ctx, c, pp, opts); {
			case err != nil:
				warnings = append(warnings, "the provider's account could not be told: "+err.Error())
			case account != "" && account != id.Account:
				warnings = append(warnings, fmt.Sprintf("the provider now reaches account %s, not %s where the payment was sent: "+
					"what it answers is not about this payment", account, id.Account))
			}
		}
	}
	// Only a payment still Processing is in doubt: a finished one's charge
	// is known.
	if s.Kind == string(kindJob) && st.Phase == paymentsv1alpha1.PhaseProcessing && pp.Spec.Stripe != nil {
		if at := lastAttempt(st).Add(searchLag(pp)); time.Now().Before(at) {
			warnings = append(warnings, fmt.Sprintf("the last attempt is younger than the provider's search lag (%s): a charge it "+
				"made may not show until %s", searchLag(pp), at.UTC().Format(time.RFC3339)))
			lagging = true
		}
	}
	return warnings, lagging
}

// lookupError says why the provider could not be asked, and what to do.
func lookupError(err error, pp *paymentsv1alpha1.PaymentProvider) error {
	switch {
	case errors.Is(err, providerlookup.ErrUnsupported):
		return fmt.Errorf("PaymentProvider %s cannot look charges up (an http service without spec.http.lookupURL): ask the service itself", pp.Name)
	case errors.Is(err, providerlookup.ErrEndpointRefused):
		return endpointRefused(pp)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("forbidden to read the credential Secret of PaymentProvider %s, which --check-provider needs (%s)", pp.Name, statusMessage(err))
	case errors.Is(err, providerlookup.ErrNoCredentials):
		return fmt.Errorf("the credential of PaymentProvider %s cannot be read: %w", pp.Name, err)
	}
	return err
}

// endpointRefused says why the plugin would not call pp, in the plugin's
// words: the package's error names the manager's flag, and the user of
// the plugin sets the plugin's flag or its environment variable.
func endpointRefused(pp *paymentsv1alpha1.PaymentProvider) error {
	field, host := "", ""
	for _, u := range providerURLs(pp.Spec) {
		parsed, err := url.Parse(u[1])
		if err == nil && !strings.EqualFold(parsed.Scheme, "https") {
			field, host = u[0], parsed.Hostname()
			break
		}
	}
	allow := fmt.Sprintf("kubectl payments calls such a host only when it is listed in --insecure-provider-hosts or in "+
		"the environment variable %s (comma-separated)", envInsecureHosts)
	if field == "" {
		return fmt.Errorf("cannot call PaymentProvider %s/%s: one of its URLs is at an address %s; use https to a public host",
			pp.Namespace, pp.Name, allow)
	}
	return fmt.Errorf("cannot call PaymentProvider %s/%s: %s is plain http to %q, and %s: "+
		"export %s=%s (or --insecure-provider-hosts=%s), or use https", pp.Namespace, pp.Name, field, host, allow,
		envInsecureHosts, host, host)
}

// providerURLs are the URLs of a PaymentProvider's spec, each with the
// field that holds it.
func providerURLs(spec paymentsv1alpha1.PaymentProviderSpec) [][2]string {
	var urls [][2]string
	if st := spec.Stripe; st != nil && st.APIBase != "" {
		urls = append(urls, [2]string{"spec.stripe.apiBase", st.APIBase})
	}
	if h := spec.HTTP; h != nil {
		for _, u := range [][2]string{{"spec.http.url", h.URL}, {"spec.http.lookupURL", h.LookupURL},
			{"spec.http.refundURL", h.RefundURL}, {"spec.http.listURL", h.ListURL}} {
			if u[1] != "" {
				urls = append(urls, u)
			}
		}
	}
	return urls
}
