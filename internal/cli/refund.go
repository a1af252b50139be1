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
	"strings"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// The values of --dry-run, as kubectl's.
const (
	dryRunNone   = "none"
	dryRunClient = "client"
	dryRunServer = "server"
)

// addDryRun adds kubectl's --dry-run: none, client (print, send nothing)
// or server (the API server checks the change and keeps nothing);
// --dry-run alone is client.
func addDryRun(cmd *cobra.Command, v *string) {
	cmd.Flags().StringVar(v, "dry-run", dryRunNone, `"none", "client" (change nothing) or "server" (the API server checks the change, nothing is kept)`)
	cmd.Flags().Lookup("dry-run").NoOptDefVal = dryRunClient
}

func checkDryRun(v string) error {
	switch v {
	case dryRunNone, dryRunClient, dryRunServer:
		return nil
	}
	return usageError(`--dry-run %q is not "none", "client" or "server"`, v)
}

type refundOptions struct {
	root     *Root
	amount   int64
	reason   string
	name     string
	provider string
	dryRun   string
	output   string
}

func newRefundCommand(r *Root) *cobra.Command {
	o := &refundOptions{root: r}
	cmd := &cobra.Command{
		Use:   "refund pj/NAME [--amount N] [--reason R] [--dry-run=client -o yaml]",
		Short: "Refund a Completed payment: print the PaymentRefund for Git, or create it",
		Long: `Refund a Completed payment, in whole or in part, with a PaymentRefund.

With --dry-run=client -o yaml the manifest is printed for your Git repository and
nothing is created; without --dry-run it is created. The amount is in the charge's
minor unit and defaults to what is left of the charge (the manifest then leaves
spec.amount out while nothing was refunded, for the whole charge); a refund is never
more than what is left (the operator refuses it without a provider call, and this
command before).
Once the job is deleted (its TTL), name its PaymentProvider with --provider.`,
		Example: `  kubectl payments refund pj/invoice-2026-0042 -n billing --amount 500 --reason requested_by_customer --dry-run=client -o yaml > refund.yaml
  kubectl payments refund pj/invoice-2026-0042 -n billing`,
		ValidArgsFunction: completeObjects(r, kindJob),
		RunE: func(cmd *cobra.Command, args []string) error {
			t, err := parseTarget(args, kindJob)
			if err != nil {
				return err
			}
			if err := o.validate(cmd); err != nil {
				return err
			}
			return o.run(ctxOf(cmd), t)
		},
	}
	cmd.Flags().Int64Var(&o.amount, "amount", 0, "Amount to refund in the charge's minor unit (default: what is left of the charge)")
	cmd.Flags().StringVar(&o.reason, "reason", "", "duplicate, fraudulent or requested_by_customer")
	cmd.Flags().StringVar(&o.name, "name", "", "The PaymentRefund's name (default: NAME-refund, NAME-refund-2, ...); also its idempotency key")
	cmd.Flags().StringVar(&o.provider, "provider", "", "The PaymentProvider of the payment, when its job is deleted (default: the job's)")
	addDryRun(cmd, &o.dryRun)
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "Print the PaymentRefund as yaml, json, or its name")
	return cmd
}

func (o *refundOptions) validate(cmd *cobra.Command) error {
	if cmd.Flags().Changed("amount") && o.amount < 1 {
		return usageError("--amount must be at least 1 (minor units)")
	}
	switch paymentsv1alpha1.RefundReason(o.reason) {
	case "", paymentsv1alpha1.RefundDuplicate, paymentsv1alpha1.RefundFraudulent, paymentsv1alpha1.RefundRequestedByCustomer:
	default:
		return usageError("--reason %q is not duplicate, fraudulent or requested_by_customer", o.reason)
	}
	if err := checkDryRun(o.dryRun); err != nil {
		return err
	}
	if o.output != "" {
		return checkOutput(o.output, outputYAML, outputJSON, "name")
	}
	return nil
}

func (o *refundOptions) run(ctx context.Context, t target) error {
	c, ns, err := o.root.ClientIn()
	if err != nil {
		return err
	}
	refunds, err := refundsOfName(ctx, c, ns, t.Name)
	if err != nil {
		return err
	}
	rf, err := o.refund(ctx, c, ns, t, refunds)
	if err != nil {
		return err
	}
	switch o.dryRun {
	case dryRunClient:
	case dryRunServer:
		err = c.Create(ctx, rf, client.DryRunAll)
	default:
		err = c.Create(ctx, rf)
	}
	if err != nil {
		if apierrors.IsAlreadyExists(err) {
			return notApplicable("PaymentRefund %s/%s exists already: name another with --name, or follow it with "+
				"kubectl payments status prefund/%s -n %s", ns, rf.Name, rf.Name, ns)
		}
		return classify(err, fmt.Sprintf("PaymentRefund %s/%s", ns, rf.Name))
	}
	return o.print(rf)
}

// refund is the PaymentRefund the flags describe, checked against the job.
func (o *refundOptions) refund(ctx context.Context, c client.Client, ns string, t target, refunds []paymentsv1alpha1.PaymentRefund) (*paymentsv1alpha1.PaymentRefund, error) {
	provider := o.provider
	var pj paymentsv1alpha1.PaymentJob
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: t.Name}, &pj)
	switch {
	case err == nil:
		if provider != "" && provider != pj.Spec.ProviderRef.Name {
			return nil, usageError("--provider %s is not the PaymentProvider of %s (%s): a refund goes only to the account "+
				"that holds the charge; leave --provider out while the job exists", provider, t, pj.Spec.ProviderRef.Name)
		}
		if pj.Status.Phase != paymentsv1alpha1.PhaseCompleted {
			return nil, notApplicable("%s in namespace %s is %s: only a Completed payment can be refunded", t, ns, orDash(string(pj.Status.Phase)))
		}
		if provider == "" {
			provider = pj.Spec.ProviderRef.Name
		}
		left, refunded, err := o.checkLeft(t, &pj, refunds)
		if err != nil {
			return nil, err
		}
		if o.amount == 0 && refunded {
			// A PaymentRefund without an amount refunds the whole charge,
			// which is more than is left: ask for the rest.
			o.amount = left
		}
	case ExitCode(classify(err, "")) == ExitNotFound && provider != "":
		// The job is gone (its TTL): the operator finds the charge in the ledger.
	case ExitCode(classify(err, "")) == ExitNotFound:
		return nil, &Error{Code: ExitNotFound, Err: fmt.Errorf("%s not found in namespace %s: check the name, or, if its job was "+
			"deleted after it finished, name its PaymentProvider with --provider", t, ns)}
	default:
		return nil, classify(err, fmt.Sprintf("%s in namespace %s", t, ns))
	}
	rf := &paymentsv1alpha1.PaymentRefund{
		TypeMeta:   metav1.TypeMeta{APIVersion: paymentsv1alpha1.GroupVersion.String(), Kind: "PaymentRefund"},
		ObjectMeta: metav1.ObjectMeta{Name: o.name, Namespace: ns},
		Spec: paymentsv1alpha1.PaymentRefundSpec{
			ProviderRef:   paymentsv1alpha1.ProviderReference{Name: provider},
			PaymentJobRef: paymentsv1alpha1.PaymentJobReference{Name: t.Name},
			Reason:        paymentsv1alpha1.RefundReason(o.reason),
		},
	}
	if o.amount > 0 {
		rf.Spec.Amount = ptr.To(o.amount)
	}
	if rf.Name == "" {
		rf.Name = nextRefundName(t.Name, refunds)
	}
	return rf, nil
}

// checkLeft returns what is left of the charge, and whether any of it was
// refunded; it refuses an amount over what is left.
func (o *refundOptions) checkLeft(t target, pj *paymentsv1alpha1.PaymentJob, refunds []paymentsv1alpha1.PaymentRefund) (int64, bool, error) {
	left, currency, charge := pj.Spec.Amount, pj.Spec.Currency, ""
	if r := pj.Status.ProviderResponse; r != nil {
		charge = r.ID
		if r.Amount > 0 {
			left, currency = r.Amount, r.Currency
		}
	}
	var by []string
	for _, rf := range refunds {
		if rf.Status.Phase == paymentsv1alpha1.PhaseFailed {
			continue
		}
		if ch := rf.Status.Charge; ch != nil && charge != "" && ch.ID != charge {
			// A refund of an earlier payment of a job of this name.
			continue
		}
		amount := left // a whole refund takes what is left
		switch {
		case rf.Status.ProviderResponse != nil && rf.Status.ProviderResponse.Amount > 0:
			amount = rf.Status.ProviderResponse.Amount
		case rf.Spec.Amount != nil:
			amount = *rf.Spec.Amount
		}
		left -= amount
		by = append(by, fmt.Sprintf("prefund/%s %d", rf.Name, amount))
	}
	if left <= 0 {
		return 0, true, notApplicable("%s is refunded in whole already (%s)", t, strings.Join(by, ", "))
	}
	if o.amount > left {
		return 0, true, notApplicable("--amount %d is more than what is left of %s: %s (refunded: %s)", o.amount, t,
			money(left, currency), strings.Join(by, ", "))
	}
	return left, len(by) > 0, nil
}

func nextRefundName(job string, refunds []paymentsv1alpha1.PaymentRefund) string {
	taken := map[string]bool{}
	for _, rf := range refunds {
		taken[rf.Name] = true
	}
	name := job + "-refund"
	for i := 2; taken[name]; i++ {
		name = fmt.Sprintf("%s-refund-%d", job, i)
	}
	return name
}

func refundsOfName(ctx context.Context, c client.Client, ns, job string) ([]paymentsv1alpha1.PaymentRefund, error) {
	var list paymentsv1alpha1.PaymentRefundList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return nil, classify(err, "the PaymentRefunds of namespace "+ns)
	}
	var out []paymentsv1alpha1.PaymentRefund
	for _, rf := range list.Items {
		if rf.Spec.PaymentJobRef.Name == job {
			out = append(out, rf)
		}
	}
	return out, nil
}

func (o *refundOptions) print(rf *paymentsv1alpha1.PaymentRefund) error {
	out := o.root.Out()
	suffix := map[string]string{dryRunClient: " (dry run)", dryRunServer: " (server dry run)"}[o.dryRun]
	switch o.output {
	case "":
		_, err := fmt.Fprintf(out, "paymentrefund.%s/%s created%s\n", paymentsGroup, rf.Name, suffix)
		return err
	case "name":
		_, err := fmt.Fprintf(out, "paymentrefund.%s/%s\n", paymentsGroup, rf.Name)
		return err
	}
	m, err := manifest(rf)
	if err != nil {
		return err
	}
	return printData(out, o.output, m)
}

// manifest is obj as a file for Git: no status, no server fields.
func manifest(obj client.Object) (map[string]any, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		for _, f := range []string{"creationTimestamp", "managedFields", "resourceVersion", "uid", "generation"} {
			delete(md, f)
		}
	}
	return m, nil
}

// patchMerge sends a JSON merge patch of obj.
func patchMerge(ctx context.Context, c client.Client, obj client.Object, patch map[string]any, opts ...client.PatchOption) error {
	b, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	return c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, b), opts...)
}
