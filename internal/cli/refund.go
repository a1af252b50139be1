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

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
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
	root       *Root
	amount     int64
	reason     string
	name       string
	provider   string
	paymentKey string
	dryRun     string
	output     string
	bookFlags
}

func newRefundCommand(r *Root) *cobra.Command {
	o := &refundOptions{root: r}
	cmd := targetCommand(r, &cobra.Command{
		Use:   "refund pj/NAME [--amount N] [--reason R] [--dry-run=client -o yaml]",
		Short: "Refund a Completed payment: print the PaymentRefund for Git, or create it",
		Long: `Refund a Completed payment, in whole or in part, with a PaymentRefund.

With --dry-run=client -o yaml the manifest is printed for your Git repository and
nothing is created; without --dry-run it is created. The amount is in the charge's
minor unit and defaults to what is left of the charge (the manifest then leaves
spec.amount out while nothing was refunded, for the whole charge); a refund is never
more than what is left (the operator refuses it without a provider call, and this
command before). What is left counts the job's PaymentRefunds that did not fail, the
refunds the outcome ledger records for the charge (also once their PaymentRefund is
deleted), and, when the provider can be asked (--check-provider), the provider's own
list of the charge's refunds.

The PaymentRefund's name, which is also its idempotency key, is NAME-refund- and a
random suffix, drawn again while a PaymentRefund, the outcome ledger or the provider
knows it: a refund under a key that was used already would be finished from that
refund's outcome, and no money would go back. The manifest names the payment by its
job's name and idempotency key (spec.paymentJobRef), so that it still finds the
payment in the ledger once the job is gone.

Once the job is deleted (its TTL), name its PaymentProvider with --provider (and, if
its manifest set spec.idempotencyKey, that key with --payment-key): the refund is made
only when the outcome ledger holds the payment.`,
		Example: `  kubectl payments refund pj/invoice-2026-0042 -n billing --amount 500 --reason requested_by_customer --dry-run=client -o yaml > refund.yaml
  kubectl payments refund pj/invoice-2026-0042 -n billing`,
	}, []kind{kindJob}, func(cmd *cobra.Command, t target) error {
		if err := o.validate(cmd); err != nil {
			return err
		}
		return o.run(ctxOf(cmd), t)
	})
	cmd.Flags().Var(minorUnits{flag: "amount", v: &o.amount}, "amount",
		"Amount to refund, a whole number of the charge's minor unit (cents for usd; default: what is left of the charge)")
	cmd.Flags().StringVar(&o.reason, "reason", "", "duplicate, fraudulent or requested_by_customer")
	cmd.Flags().StringVar(&o.name, "name", "", "The PaymentRefund's name, also its idempotency key (default: NAME-refund- and a random suffix); "+
		"refused when a refund of the namespace, the ledger or the provider has it")
	cmd.Flags().StringVar(&o.provider, "provider", "", "The PaymentProvider of the payment, when its job is deleted (default: the job's)")
	cmd.Flags().StringVar(&o.paymentKey, "payment-key", "", "The job's spec.idempotencyKey, when its job is deleted and its manifest set one "+
		"(default: the job's key, or NAME once it is deleted)")
	o.addBookFlags(cmd, true,
		"Also ask the provider (read-only) for the charge's refunds; needs get on the provider's Secret, and warns when it cannot")
	addDryRun(cmd, &o.dryRun)
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "Print the PaymentRefund as yaml, json, or its name")
	return cmd
}

func (o *refundOptions) validate(cmd *cobra.Command) error {
	if cmd.Flags().Changed("amount") && o.amount < 1 {
		return usageError("--amount must be at least 1 (minor units)")
	}
	if err := o.validateNames(); err != nil {
		return err
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

// validateNames refuses a --name the API server would refuse as the
// PaymentRefund's name (the name is also the refund's key, and every
// object name is a valid key), a --provider no PaymentProvider can have,
// and a --payment-key the API refuses as a key.
func (o *refundOptions) validateNames() error {
	for _, name := range []struct{ flag, value string }{{"name", o.name}, {"provider", o.provider}} {
		if name.value == "" {
			continue
		}
		if err := checkObjectName(name.flag, name.value); err != nil {
			return err
		}
	}
	if o.paymentKey != "" {
		return checkKey("payment-key", o.paymentKey)
	}
	return nil
}

func (o *refundOptions) run(ctx context.Context, t target) error {
	c, ns, err := o.root.ClientIn()
	if err != nil {
		return err
	}
	var live paymentsv1alpha1.PaymentRefundList
	if err := c.List(ctx, &live, client.InNamespace(ns)); err != nil {
		return classify(err, "the PaymentRefunds of namespace "+ns)
	}
	k := &refundCheck{o: o, c: c, ns: ns, t: t, live: live.Items}
	if err := k.openLedger(ctx); err != nil {
		return err
	}
	defer k.close()
	// What the checks could not see is said whatever the outcome.
	defer k.warn()
	if err := k.findPayment(ctx); err != nil {
		return err
	}
	k.askProvider(ctx)
	k.readRefunds(ctx)
	if err := k.checkLeft(); err != nil {
		return err
	}
	name, err := k.refundName(ctx)
	if err != nil {
		return err
	}
	rf := k.manifest(name)
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
