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
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

type approveOptions struct {
	root   *Root
	dryRun string
}

func newApproveCommand(r *Root) *cobra.Command {
	o := &approveOptions{root: r}
	cmd := targetCommand(r, &cobra.Command{
		Use:   "approve pj/NAME | prefund/NAME [--dry-run]",
		Short: "Approve a suspended payment or refund: set spec.suspend to false so the operator sends it",
		Long: `Approve a payment or a refund held by spec.suspend (an approval gate): the operator
sends it once spec.suspend is false. A payment that is not suspended is left as it is.
When Git manages the object, change spec.suspend there too, or the next sync
suspends it again before it is sent.`,
		Example: `  kubectl payments approve pj/invoice-2026-0042 -n billing`,
	}, []kind{kindJob, kindRefund}, func(cmd *cobra.Command, t target) error {
		if err := checkDryRun(o.dryRun); err != nil {
			return err
		}
		return o.run(ctxOf(cmd), t)
	})
	addDryRun(cmd, &o.dryRun)
	return cmd
}

func (o *approveOptions) run(ctx context.Context, t target) error {
	c, ns, obj, err := getPayment(ctx, o.root, t)
	if err != nil {
		return err
	}
	out := o.root.Out()
	if !suspended(obj) {
		_, err := fmt.Fprintf(out, "%s in namespace %s is not suspended (phase %s): nothing to approve\n", t, ns, orDash(string(obj.GetPaymentStatus().Phase)))
		return err
	}
	if git := gitOwner(obj); git != "" {
		fmt.Fprintf(o.root.ErrOut(), "Warning: %s is managed by %s: set spec.suspend to false in Git too, or its next sync suspends it again\n", t, git)
	}
	patch := map[string]any{"spec": map[string]any{"suspend": false}}
	switch o.dryRun {
	case dryRunClient:
		_, err := fmt.Fprintf(out, "%s in namespace %s would be approved (spec.suspend: false) (dry run)\n", t, ns)
		return err
	case dryRunServer:
		if err := patchMerge(ctx, c, obj, patch, client.DryRunAll); err != nil {
			return classify(err, fmt.Sprintf("%s in namespace %s", t, ns))
		}
		_, err := fmt.Fprintf(out, "%s in namespace %s would be approved (spec.suspend: false) (server dry run)\n", t, ns)
		return err
	}
	if err := patchMerge(ctx, c, obj, patch); err != nil {
		return classify(err, fmt.Sprintf("%s in namespace %s", t, ns))
	}
	_, err = fmt.Fprintf(out, "%s in namespace %s approved: the operator sends it now (kubectl payments status %s -n %s)\n", t, ns, t, ns)
	return err
}

func suspended(obj payment) bool {
	var s *bool
	switch o := obj.(type) {
	case *paymentsv1alpha1.PaymentJob:
		s = o.Spec.Suspend
	case *paymentsv1alpha1.PaymentRefund:
		s = o.Spec.Suspend
	}
	return s != nil && *s
}

// gitOwner names the GitOps tool that manages obj, if its labels or
// annotations say so.
func gitOwner(obj client.Object) string {
	for k := range obj.GetLabels() {
		if strings.HasPrefix(k, "kustomize.toolkit.fluxcd.io/") || strings.HasPrefix(k, "helm.toolkit.fluxcd.io/") {
			return "Flux"
		}
	}
	for k := range obj.GetAnnotations() {
		if strings.HasPrefix(k, "argocd.argoproj.io/") {
			return "Argo CD"
		}
	}
	return ""
}
