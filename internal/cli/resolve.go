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
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// maxIDLength is the longest charge id the operator takes in a resolution.
const maxIDLength = 255

// The search lags the operator assumes when spec.lookup.searchLagSeconds is
// not set (api/v1alpha1, ProviderLookup).
const (
	defaultStripeSearchLag = 900 * time.Second
	defaultHTTPSearchLag   = 60 * time.Second
)

type resolveOptions struct {
	root       *Root
	charged    string
	notCharged bool
	dryRun     string
}

func newResolveCommand(r *Root) *cobra.Command {
	o := &resolveOptions{root: r}
	cmd := targetCommand(r, &cobra.Command{
		Use:   "resolve pj/NAME (--charged=ID | --not-charged) [--dry-run]",
		Short: "Resolve a Stalled payment by hand: show what the operator will check and when, then set the annotation",
		Long: `Resolve a payment that is Processing and Stalled on an uncertain outcome, when you know
what happened at the provider. The command says what the operator will verify before it
accepts your answer, and when, then sets the payments.idempotency.dev/resolve annotation.
The operator never charges because of it. With --dry-run nothing is changed.`,
		Example: `  kubectl payments resolve pj/invoice-2026-0042 -n billing --charged=pi_3Q0aZk2eZvKYlo2C1x8yT0aB --dry-run
  kubectl payments resolve pj/invoice-2026-0042 -n billing --not-charged`,
	}, []kind{kindJob, kindRefund}, func(cmd *cobra.Command, t target) error {
		if (o.charged == "") == !o.notCharged {
			return usageError("say what happened at the provider: exactly one of --charged=ID or --not-charged")
		}
		if o.charged != "" && (len(o.charged) > maxIDLength || strings.ContainsFunc(o.charged, func(r rune) bool { return r <= ' ' || r > '~' })) {
			return usageError("--charged %q must be 1 to %d visible ASCII characters, as the operator requires", o.charged, maxIDLength)
		}
		if err := checkDryRun(o.dryRun); err != nil {
			return err
		}
		return o.run(ctxOf(cmd), t)
	})
	cmd.Flags().StringVar(&o.charged, "charged", "", "The provider holds this charge or refund (its id: pi_... or re_... at Stripe), succeeded, under the payment's key")
	cmd.Flags().BoolVar(&o.notCharged, "not-charged", false, "The provider holds no charge under the payment's key that succeeded or is pending")
	addDryRun(cmd, &o.dryRun)
	return cmd
}

func (o *resolveOptions) value() string {
	if o.notCharged {
		return "not-charged"
	}
	return "charged=" + o.charged
}

func (o *resolveOptions) run(ctx context.Context, t target) error {
	c, ns, obj, err := getPayment(ctx, o.root, t)
	if err != nil {
		return err
	}
	st := obj.GetPaymentStatus()
	stalled := meta.FindStatusCondition(st.Conditions, paymentsv1alpha1.ConditionStalled)
	if st.Phase != paymentsv1alpha1.PhaseProcessing || stalled == nil || stalled.Status != metav1.ConditionTrue {
		return notApplicable("%s in namespace %s is %s and not Stalled: the operator resolves only a payment that is "+
			"Processing with Stalled=True, and would refuse the annotation (ResolutionRefused); wait for it to stall "+
			"or for the provider to answer (kubectl payments status %s -n %s)", t, ns, orDash(string(st.Phase)), t, ns)
	}
	var pp paymentsv1alpha1.PaymentProvider
	ref := providerRefOf(obj)
	ppErr := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref}, &pp)
	if ppErr != nil && !apierrors.IsNotFound(ppErr) {
		return classify(ppErr, fmt.Sprintf("PaymentProvider %s/%s", ns, ref))
	}
	var provider *paymentsv1alpha1.PaymentProvider
	if ppErr == nil {
		provider = &pp
	}
	out := o.root.Out()
	fmt.Fprintf(out, "%s in namespace %s is Processing and Stalled (%s: %s).\n", t, ns, stalled.Reason, stalled.Message)
	current := obj.GetAnnotations()[paymentsv1alpha1.AnnotationResolve]
	switch current {
	case "":
	case o.value():
		return notApplicable("%s already has %s=%s: the operator acts on it once (a ResolutionWaiting event says when; "+
			"a ResolutionRefused event says why it was refused, and a refused value is not checked again until it "+
			"changes): kubectl payments status %s -n %s", t, paymentsv1alpha1.AnnotationResolve, current, t, ns)
	default:
		fmt.Fprintf(out, "It has %s=%s, which this replaces.\n", paymentsv1alpha1.AnnotationResolve, current)
	}
	fmt.Fprintf(out, "With %s=%s the operator will:\n", paymentsv1alpha1.AnnotationResolve, o.value())
	p := plan{kind: t.Kind, st: st, pp: provider, ref: ref, charged: o.charged, notCharged: o.notCharged}
	p.write(out, time.Now())
	switch o.dryRun {
	case dryRunClient:
		fmt.Fprintln(out, "Dry run: the annotation was not set.")
		return nil
	case dryRunServer:
		if err := patchMerge(ctx, c, obj, o.patch(), client.DryRunAll); err != nil {
			return classify(err, fmt.Sprintf("%s in namespace %s", t, ns))
		}
		fmt.Fprintln(out, "Server dry run: the API server accepts the annotation; it was not set.")
		return nil
	}
	if err := patchMerge(ctx, c, obj, o.patch()); err != nil {
		return classify(err, fmt.Sprintf("%s in namespace %s", t, ns))
	}
	fmt.Fprintf(out, "Annotation set. Follow it with: kubectl payments status %s -n %s\n", t, ns)
	return nil
}

func (o *resolveOptions) patch() map[string]any {
	return map[string]any{"metadata": map[string]any{"annotations": map[string]string{paymentsv1alpha1.AnnotationResolve: o.value()}}}
}

// plan is what the operator does with a resolve annotation before it
// accepts it (internal/controllers/engine, resolve; docs/operations.md,
// "Resolving an uncertain job by hand"), as far as the cluster tells.
type plan struct {
	kind       kind
	st         *paymentsv1alpha1.PaymentStatus
	pp         *paymentsv1alpha1.PaymentProvider
	ref        string
	charged    string
	notCharged bool
}

func (p plan) write(out io.Writer, now time.Time) {
	step := 0
	say := func(format string, args ...any) {
		step++
		fmt.Fprintf(out, "  %d. "+format+"\n", append([]any{step}, args...)...)
	}
	if c := p.st.Claim; c != nil && c.ExpiresAt.After(now) {
		say("wait for the claim of %s to expire (%s, %s), unless that manager is the one resolving: another process may be calling the provider",
			c.Holder, c.ExpiresAt.UTC().Format(time.RFC3339), ago(c.ExpiresAt.Time, now))
	}
	if p.notCharged {
		if lag := p.searchLag(); lag > 0 {
			at := lastAttempt(p.st).Add(lag)
			when := "already over"
			if at.After(now) {
				when = fmt.Sprintf("until %s, %s", at.UTC().Format(time.RFC3339), ago(at, now))
			}
			say("wait until the last attempt is older than the provider's search lag (%s, spec.lookup.searchLagSeconds): %s; "+
				"no new attempt is made meanwhile", lag, when)
		}
	}
	if why := p.unaskable(); why != "" {
		say("record your word unverified (status.resolution.verified: false): %s", why)
	} else {
		if p.notCharged {
			say("look the key %s up at PaymentProvider %s, and refuse the answer if anything under it succeeded or is pending",
				p.st.IdempotencyKey, p.ref)
		} else {
			say("read %s at PaymentProvider %s (by its id, so without search lag), and refuse the answer unless it "+
				"succeeded under the key %s", p.charged, p.ref, p.st.IdempotencyKey)
		}
		if id := p.st.Provider; id != nil && id.Account != "" {
			fmt.Fprintf(out, "     (only while the provider's credential still reaches account %s, where the payment was sent; "+
				"otherwise your word is recorded unverified)\n", id.Account)
		}
	}
	if p.notCharged {
		say("then mark it Failed (reason Resolved), record it in the outcome ledger and say who resolved it")
	} else {
		say("then mark it Completed with %s, record it in the outcome ledger and say who resolved it", p.charged)
	}
	fmt.Fprintln(out, "A refused answer shows as a ResolutionRefused event, a waiting one as ResolutionWaiting.")
}

// searchLag is how long after the last attempt the operator checks a
// not-charged answer: none for a refund (its charge's refunds are listed
// exactly), the provider's spec.lookup.searchLagSeconds, or its kind's
// default (Stripe's when the provider is gone).
func (p plan) searchLag() time.Duration {
	if p.kind == kindRefund {
		return 0
	}
	if p.pp == nil {
		return defaultStripeSearchLag
	}
	return searchLag(p.pp)
}

// unaskable says why the operator cannot ask the provider, if it cannot.
func (p plan) unaskable() string {
	switch {
	case p.pp == nil:
		return fmt.Sprintf("PaymentProvider %s is gone, so the provider cannot be asked (unless the manager kept its adapter "+
			"in memory since the payment's last attempt)", p.ref)
	case p.pp.Spec.HTTP != nil && p.pp.Spec.HTTP.LookupURL == "":
		return fmt.Sprintf("PaymentProvider %s has no lookupURL, so the provider cannot be asked", p.ref)
	case p.st.Provider != nil && p.st.Provider.UID != "" && p.st.Provider.UID != string(p.pp.UID):
		return fmt.Sprintf("PaymentProvider %s was replaced since the payment was sent (uid %s, now %s): it cannot speak for "+
			"the account that was called", p.ref, p.st.Provider.UID, p.pp.UID)
	}
	ready := meta.FindStatusCondition(p.pp.Status.Conditions, paymentsv1alpha1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != p.pp.Generation {
		return fmt.Sprintf("PaymentProvider %s is not Ready (%s), so the provider cannot be asked (unless the manager kept its "+
			"adapter in memory)", p.ref, conditionText(p.pp.Status.Conditions, paymentsv1alpha1.ConditionReady))
	}
	return ""
}

// lastAttempt is when the payment's last claim was taken, as the operator
// counts the search lag from it.
func lastAttempt(st *paymentsv1alpha1.PaymentStatus) time.Time {
	switch {
	case st.Claim != nil:
		return st.Claim.AcquiredAt.Time
	case st.StartedAt != nil:
		return st.StartedAt.Time
	}
	return time.Time{}
}

func searchLag(pp *paymentsv1alpha1.PaymentProvider) time.Duration {
	if l := pp.Spec.Lookup; l != nil && l.SearchLagSeconds != nil {
		return time.Duration(*l.SearchLagSeconds) * time.Second
	}
	if pp.Spec.Stripe != nil {
		return defaultStripeSearchLag
	}
	return defaultHTTPSearchLag
}

// payment is a PaymentJob or a PaymentRefund.
type payment interface {
	client.Object
	GetPaymentStatus() *paymentsv1alpha1.PaymentStatus
}

// getPayment reads t in the namespace of -n, and returns it with the
// client and the namespace it read it with.
func getPayment(ctx context.Context, r *Root, t target) (client.Client, string, payment, error) {
	c, ns, err := r.ClientIn()
	if err != nil {
		return nil, "", nil, err
	}
	obj := newPayment(t.Kind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: t.Name}, obj); err != nil {
		return nil, "", nil, classify(err, fmt.Sprintf("%s in namespace %s", t, ns))
	}
	return c, ns, obj, nil
}

// newPayment is an empty object of kind k.
func newPayment(k kind) payment {
	if k == kindRefund {
		return &paymentsv1alpha1.PaymentRefund{}
	}
	return &paymentsv1alpha1.PaymentJob{}
}

func providerRefOf(obj payment) string {
	switch o := obj.(type) {
	case *paymentsv1alpha1.PaymentJob:
		return o.Spec.ProviderRef.Name
	case *paymentsv1alpha1.PaymentRefund:
		return o.Spec.ProviderRef.Name
	}
	return ""
}
