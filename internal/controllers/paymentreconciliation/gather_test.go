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

package paymentreconciliation

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// A run of named namespaces reads those namespaces' PaymentJobs and
// PaymentRefunds only: it never lists every namespace's and filters them
// afterwards. A run of the whole account lists them across namespaces.
func TestGatherReadsOnlyTheRunsNamespaces(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(paymentsv1alpha1.AddToScheme(scheme)).To(Succeed())
	account := paymentsv1alpha1.ProviderIdentity{UID: "uid-1", Endpoint: "https://api.stripe.com", Account: "acct_1"}
	at := metav1.NewTime(time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	namespaces := []string{"shop", "billing", "tenant-b"}
	objs := make([]client.Object, 0, 2*len(namespaces))
	for _, ns := range namespaces {
		job := &paymentsv1alpha1.PaymentJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "order-1"},
			Spec: paymentsv1alpha1.PaymentJobSpec{Amount: 1000, Currency: "usd"}}
		job.Status.Phase, job.Status.IdempotencyKey, job.Status.Provider = paymentsv1alpha1.PhaseCompleted, payment.SentKey(ns, "order-1"), &account
		job.Status.CompletedAt = &at
		refund := &paymentsv1alpha1.PaymentRefund{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "back-1"}}
		refund.Status.Phase, refund.Status.IdempotencyKey, refund.Status.Provider = paymentsv1alpha1.PhaseCompleted, payment.SentKey(ns, "refund:back-1"), &account
		refund.Status.CompletedAt = &at
		objs = append(objs, job, refund)
	}
	for _, tc := range []struct {
		name       string
		namespaces []string
		listed     []string
		objects    []string
	}{
		{"two namespaces", []string{"shop", "billing"},
			[]string{"PaymentJobList shop", "PaymentJobList billing", "PaymentRefundList shop", "PaymentRefundList billing"},
			[]string{"shop/order-1", "billing/order-1", "shop/back-1", "billing/back-1"}},
		{"the whole account", nil,
			[]string{"PaymentJobList *", "PaymentRefundList *"},
			[]string{"shop/order-1", "billing/order-1", "tenant-b/order-1", "shop/back-1", "billing/back-1", "tenant-b/back-1"}},
	} {
		var listed []string
		reader := interceptor.NewClient(fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(objs...).Build(),
			interceptor.Funcs{List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
				o := (&client.ListOptions{}).ApplyOptions(opts)
				ns := o.Namespace
				if ns == "" {
					ns = "*"
				}
				kind := "PaymentJobList"
				if _, ok := list.(*paymentsv1alpha1.PaymentRefundList); ok {
					kind = "PaymentRefundList"
				}
				listed = append(listed, kind+" "+ns)
				return c.List(ctx, list, opts...)
			}})
		b, err := gather(t.Context(), reader, scope{account: account, from: at.Add(-time.Hour), to: at.Add(time.Hour), namespaces: tc.namespaces})
		g.Expect(err).NotTo(HaveOccurred(), tc.name)
		g.Expect(listed).To(ConsistOf(tc.listed), tc.name)
		var got []string
		for _, r := range b.inWindow {
			got = append(got, r.Object)
		}
		g.Expect(got).To(ConsistOf(tc.objects), tc.name)
	}
}
