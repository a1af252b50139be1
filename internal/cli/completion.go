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
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// completeObjects completes TYPE/NAME with the names of the kinds' objects
// in the namespace of -n (cobra's __complete, which the shell scripts of
// `kubectl payments completion` and kubectl's plugin completion call).
func completeObjects(r *Root, kinds ...kind) cobra.CompletionFunc {
	return completeFirst(r, true, func(ctx context.Context, c client.Client) ([]string, error) {
		ns, err := r.Namespace()
		if err != nil {
			return nil, err
		}
		var out []string
		for _, k := range kinds {
			prefix, list := "pj/", client.ObjectList(&paymentsv1alpha1.PaymentJobList{})
			if k == kindRefund {
				prefix, list = "prefund/", &paymentsv1alpha1.PaymentRefundList{}
			}
			if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
				return nil, err
			}
			for _, name := range names(list) {
				out = append(out, prefix+name)
			}
		}
		return out, nil
	})
}

// completeProviders completes --provider with the PaymentProviders of the
// namespace of -n.
func completeProviders(r *Root) cobra.CompletionFunc {
	return completeFirst(r, false, func(ctx context.Context, c client.Client) ([]string, error) {
		ns, err := r.Namespace()
		if err != nil {
			return nil, err
		}
		var list paymentsv1alpha1.PaymentProviderList
		err = c.List(ctx, &list, client.InNamespace(ns))
		return names(&list), err
	})
}

// completeReconciliations completes the names of PaymentReconciliations.
func completeReconciliations(r *Root) cobra.CompletionFunc {
	return completeFirst(r, true, func(ctx context.Context, c client.Client) ([]string, error) {
		var list paymentsv1alpha1.PaymentReconciliationList
		err := c.List(ctx, &list)
		return names(&list), err
	})
}

// completeFirst completes with the candidates that start with what was
// typed: the first argument only when firstOnly (later ones get nothing),
// a flag's value otherwise. A client that cannot be made, or an error of
// candidates, ends the completion with cobra.ShellCompDirectiveError.
func completeFirst(r *Root, firstOnly bool, candidates func(ctx context.Context, c client.Client) ([]string, error)) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if firstOnly && len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := r.Client()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		all, err := candidates(ctxOf(cmd), c)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var out []cobra.Completion
		for _, name := range all {
			if strings.HasPrefix(name, toComplete) {
				out = append(out, name)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// names are the names of the objects of list, in its order.
func names(list client.ObjectList) []string {
	items, err := meta.ExtractList(list)
	if err != nil {
		// Only a list without Items fails; every list here has them.
		return nil
	}
	out := make([]string, 0, len(items))
	for _, o := range items {
		if obj, ok := o.(client.Object); ok {
			out = append(out, obj.GetName())
		}
	}
	return out
}
