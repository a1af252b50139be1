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
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

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
	dryRun     bool
}

func newResolveCommand(r *Root) *cobra.Command {
	o := &resolveOptions{root: r}
	cmd := &cobra.Command{
		Use:   "resolve pj/NAME (--charged=ID | --not-charged) [--dry-run]",
		Short: "Resolve a Stalled payment by hand: show what the operator will check and when, then set the annotation",
		Long: `Resolve a payment that is Processing and Stalled on an uncertain outcome, when you know
what happened at the provider. The command says what the operator will verify before it
accepts your answer, and when, then sets the payments.idempotency.dev/resolve annotation.
The operator never charges because of it. With --dry-run nothing is changed.`,
		Example: `  kubectl payments resolve pj/invoice-2026-0042 -n billing --charged=pi_3Q0aZk2eZvKYlo2C1x8yT0aB --dry-run
  kubectl payments resolve pj/invoice-2026-0042 -n billing --not-charged`,
		ValidArgsFunction: completeObjects(r, kindJob, kindRefund),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := parseTarget(args, kindJob, kindRefund)
			if err != nil {
				return err
			}
			if (o.charged == "") == !o.notCharged {
				return usageError("say what happened at the provider: exactly one of --charged=ID or --not-charged")
			}
			return o.run(ctxOf(cmd), t)
		},
	}
	cmd.Flags().StringVar(&o.charged, "charged", "", "The provider holds this charge (its id, pi_... at Stripe), succeeded, under the payment's key")
	cmd.Flags().BoolVar(&o.notCharged, "not-charged", false, "The provider holds no charge under the payment's key that succeeded or is pending")
	cmd.Flags().BoolVar(&o.dryRun, "dry-run", false, "Only show what the operator would check; change nothing")
	return cmd
}

func (o *resolveOptions) value() string {
	if o.notCharged {
		return "not-charged"
	}
	return "charged=" + o.charged
}

func (o *resolveOptions) run(ctx context.Context, t target) error {
	c, ns, err := o.root.ClientIn()
	if err != nil {
		return err
	}
	obj, err := getPayment(ctx, c, ns, t)
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
	if ppErr != nil && ExitCode(classify(ppErr, "")) != ExitNotFound {
		return classify(ppErr, fmt.Sprintf("PaymentProvider %s/%s", ns, ref))
	}
	var provider *paymentsv1alpha1.PaymentProvider
	if ppErr == nil {
		provider = &pp
	}
	out := o.root.Out()
	fmt.Fprintf(out, "%s in namespace %s is Processing and Stalled (%s: %s).\n", t, ns, stalled.Reason, stalled.Message)
	fmt.Fprintf(out, "With %s=%s the operator will:\n", paymentsv1alpha1.AnnotationResolve, o.value())
	o.plan(out, st, provider, ref, time.Now())
	if o.dryRun {
		fmt.Fprintln(out, "Dry run: the annotation was not set.")
		return nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		paymentsv1alpha1.AnnotationResolve: o.value()}}})
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return classify(err, fmt.Sprintf("%s in namespace %s", t, ns))
	}
	fmt.Fprintf(out, "Annotation set. Follow it with: kubectl payments status %s -n %s\n", t, ns)
	return nil
}

// plan writes the steps the operator takes before it accepts the value
// (docs/operations.md, "Resolving an uncertain job by hand").
func (o *resolveOptions) plan(out io.Writer, st *paymentsv1alpha1.PaymentStatus, pp *paymentsv1alpha1.PaymentProvider, ref string, now time.Time) {
	step := 0
	say := func(format string, args ...any) {
		step++
		fmt.Fprintf(out, "  %d. "+format+"\n", append([]any{step}, args...)...)
	}
	if c := st.Claim; c != nil && c.ExpiresAt.After(now) {
		say("wait for the claim of %s to expire (%s, %s): no other process may hold the payment", c.Holder,
			c.ExpiresAt.UTC().Format(time.RFC3339), ago(c.ExpiresAt.Time, now))
	}
	askable := pp != nil && (pp.Spec.Stripe != nil || (pp.Spec.HTTP != nil && pp.Spec.HTTP.LookupURL != ""))
	if !askable {
		why := fmt.Sprintf("PaymentProvider %s is gone", ref)
		if pp != nil {
			why = fmt.Sprintf("PaymentProvider %s has no lookupURL", ref)
		}
		say("record your word unverified (resolution.verified: false): %s, so the provider cannot be asked", why)
	} else if o.notCharged {
		lag := searchLag(pp)
		at := now
		if c := st.Claim; c != nil {
			at = c.AcquiredAt.Add(lag)
		}
		when := "now"
		if at.After(now) {
			when = fmt.Sprintf("at %s, %s", at.UTC().Format(time.RFC3339), ago(at, now))
		}
		say("wait until the last attempt is older than the provider's search lag (%s, spec.lookup.searchLagSeconds): %s; "+
			"no new attempt is made meanwhile", lag, when)
		say("look the key %s up at PaymentProvider %s and refuse the answer if anything under it succeeded or is pending",
			st.IdempotencyKey, ref)
	} else {
		say("read charge %s at PaymentProvider %s (by id, so without search lag) and refuse the answer unless it "+
			"succeeded under the key %s", o.charged, ref, st.IdempotencyKey)
	}
	if o.notCharged {
		say("then mark the payment Failed (reason Resolved), record it in the outcome ledger and say who resolved it")
	} else {
		say("then mark the payment Completed with charge %s, record it in the outcome ledger and say who resolved it", o.charged)
	}
	fmt.Fprintln(out, "A refused answer shows as a ResolutionRefused event; a waiting one as ResolutionWaiting.")
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

func getPayment(ctx context.Context, c client.Client, ns string, t target) (payment, error) {
	var obj payment = &paymentsv1alpha1.PaymentJob{}
	if t.Kind == kindRefund {
		obj = &paymentsv1alpha1.PaymentRefund{}
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: t.Name}, obj); err != nil {
		return nil, classify(err, fmt.Sprintf("%s in namespace %s", t, ns))
	}
	return obj, nil
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
