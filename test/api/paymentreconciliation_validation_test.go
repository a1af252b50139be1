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

package v1alpha1_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

func TestPaymentReconciliationIsDiscoverable(t *testing.T) {
	g := NewWithT(t)
	resources, err := dc.ServerResourcesForGroupVersion(paymentsv1alpha1.GroupVersion.String())
	g.Expect(err).NotTo(HaveOccurred())
	byName := map[string]metav1.APIResource{}
	for _, r := range resources.APIResources {
		byName[r.Name] = r
	}
	g.Expect(byName).To(HaveKey("paymentreconciliations/status"))
	runs := byName["paymentreconciliations"]
	g.Expect(runs.Namespaced).To(BeFalse(), "an account's books span namespaces")
	g.Expect(runs.ShortNames).To(ConsistOf("precon"))
	pages := byName["paymentreconciliationreports"]
	g.Expect(pages.Namespaced).To(BeFalse())
	g.Expect(pages.ShortNames).To(ConsistOf("preport"))
}

// reconciliation is a PaymentReconciliation manifest as a user writes it.
func reconciliation(name string, spec map[string]any) *unstructured.Unstructured {
	base := map[string]any{"providerRef": map[string]any{"namespace": "billing", "name": "stripe"}}
	for k, v := range spec {
		base[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": paymentsv1alpha1.GroupVersion.String(),
		"kind":       "PaymentReconciliation",
		"metadata":   map[string]any{"name": name},
		"spec":       base,
	}}
}

func TestPaymentReconciliationValidation(t *testing.T) {
	ctx := context.Background()
	day := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	from, to := day.Format(time.RFC3339), day.Add(24*time.Hour).Format(time.RFC3339)

	t.Run("a day, defaults applied", func(t *testing.T) {
		g := NewWithT(t)
		obj := reconciliation(uniqueName("recon-day"), map[string]any{"from": from, "to": to})
		g.Expect(k8sClient.Create(ctx, obj, client.FieldValidation(metav1.FieldValidationStrict))).To(Succeed())
		var got paymentsv1alpha1.PaymentReconciliation
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Name: obj.GetName()}, &got)).To(Succeed())
		g.Expect(got.Spec.Report).To(Equal(paymentsv1alpha1.ReportDiscrepancies), "the report lists discrepancies by default")
		g.Expect(got.Spec.From.Time).To(BeTemporally("==", day))

		// A run is never changed.
		got.Spec.To = &metav1.Time{Time: day.Add(48 * time.Hour)}
		err := k8sClient.Update(ctx, &got)
		g.Expect(err).To(HaveOccurred())
		g.Expect(err.Error()).To(ContainSubstring("spec is immutable"))
	})

	t.Run("a rolling window, as a CronJob creates it", func(t *testing.T) {
		g := NewWithT(t)
		obj := reconciliation("", map[string]any{"lookbackSeconds": int64(26 * 3600)})
		obj.SetGenerateName("daily-")
		g.Expect(k8sClient.Create(ctx, obj)).To(Succeed())
		g.Expect(obj.GetName()).To(HavePrefix("daily-"))
	})

	for _, tc := range []struct {
		name string
		spec map[string]any
		want string
	}{
		{"no window", map[string]any{}, "set exactly one of spec.from and spec.lookbackSeconds"},
		{"both starts", map[string]any{"from": from, "lookbackSeconds": int64(3600)}, "set exactly one of spec.from and spec.lookbackSeconds"},
		{"an end before the start", map[string]any{"from": to, "to": from}, "spec.to must come after spec.from"},
		{"an end without a start", map[string]any{"lookbackSeconds": int64(3600), "to": to}, "spec.to must come after spec.from"},
		{"a lookback under a minute", map[string]any{"lookbackSeconds": int64(10)}, "spec.lookbackSeconds"},
		{"a budget beyond Stripe's read limit", map[string]any{"from": from, "requestsPerSecond": int64(500)}, "spec.requestsPerSecond"},
		{"an unknown report", map[string]any{"from": from, "report": "Everything"}, "spec.report"},
		{"no provider", map[string]any{"from": from, "providerRef": map[string]any{"name": "stripe"}}, "spec.providerRef.namespace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := k8sClient.Create(ctx, reconciliation(uniqueName("recon-bad"), tc.spec))
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring(tc.want))
		})
	}
}
