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
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// completeObjects completes TYPE/NAME with the names of the kinds' objects
// in the namespace of -n (cobra's __complete, which the shell scripts of
// `kubectl payments completion` and kubectl's plugin completion call).
func completeObjects(r *Root, kinds ...kind) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := r.Client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		ns, err := r.Namespace()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var out []cobra.Completion
		for _, k := range kinds {
			prefix, list := "pj/", client.ObjectList(&paymentsv1alpha1.PaymentJobList{})
			if k == kindRefund {
				prefix, list = "prefund/", &paymentsv1alpha1.PaymentRefundList{}
			}
			if err := c.List(ctxOf(cmd), list, client.InNamespace(ns)); err != nil {
				return nil, cobra.ShellCompDirectiveError
			}
			for _, name := range names(list) {
				if strings.HasPrefix(prefix+name, toComplete) {
					out = append(out, prefix+name)
				}
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeProviders completes --provider with the PaymentProviders of the
// namespace of -n.
func completeProviders(r *Root) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		c, err := r.Client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		ns, err := r.Namespace()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var list paymentsv1alpha1.PaymentProviderList
		if err := c.List(ctxOf(cmd), &list, client.InNamespace(ns)); err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var out []cobra.Completion
		for _, pp := range list.Items {
			if strings.HasPrefix(pp.Name, toComplete) {
				out = append(out, pp.Name)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

func names(list client.ObjectList) []string {
	var out []string
	switch l := list.(type) {
	case *paymentsv1alpha1.PaymentJobList:
		for _, o := range l.Items {
			out = append(out, o.Name)
		}
	case *paymentsv1alpha1.PaymentRefundList:
		for _, o := range l.Items {
			out = append(out, o.Name)
		}
	}
	return out
}

// completeReconciliations completes the names of PaymentReconciliations.
func completeReconciliations(r *Root) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := r.Client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var list paymentsv1alpha1.PaymentReconciliationList
		if err := c.List(ctxOf(cmd), &list); err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var out []cobra.Completion
		for _, pr := range list.Items {
			if strings.HasPrefix(pr.Name, toComplete) {
				out = append(out, pr.Name)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
