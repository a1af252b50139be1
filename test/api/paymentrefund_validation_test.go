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
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

func TestPaymentRefundIsDiscoverable(t *testing.T) {
	g := NewWithT(t)
	resources, err := dc.ServerResourcesForGroupVersion(paymentsv1alpha1.GroupVersion.String())
	g.Expect(err).NotTo(HaveOccurred())

	byName := map[string]metav1.APIResource{}
	for _, r := range resources.APIResources {
		byName[r.Name] = r
	}
	g.Expect(byName).To(HaveKey("paymentrefunds"))
	g.Expect(byName).To(HaveKey("paymentrefunds/status"))

	refunds := byName["paymentrefunds"]
	g.Expect(refunds.Namespaced).To(BeTrue())
	g.Expect(refunds.Kind).To(Equal("PaymentRefund"))
	g.Expect(refunds.ShortNames).To(ConsistOf("prefund"))
	g.Expect(refunds.Categories).To(ConsistOf("payments"), "kubectl get payments lists refunds with jobs")
}

// validRefund is a PaymentRefund manifest as a user writes it, with every
// field set.
func validRefund(name string) map[string]any {
	return map[string]any{
		"apiVersion": paymentsv1alpha1.GroupVersion.String(),
		"kind":       "PaymentRefund",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{
			"providerRef":             map[string]any{"name": "stripe"},
			"paymentJobRef":           map[string]any{"name": "invoice-42", "idempotencyKey": "invoice-2026-0042"},
			"amount":                  int64(500),
			"reason":                  "requested_by_customer",
			"idempotencyKey":          "refund-2026-0042-1",
			"metadata":                map[string]any{"ticket": "SUP-7"},
			"suspend":                 true,
			"backoffLimit":            int64(3),
			"activeDeadlineSeconds":   int64(3600),
			"ttlSecondsAfterFinished": int64(86400),
		},
	}
}

func TestPaymentRefundAcceptsValidObjectsAndRoundTrips(t *testing.T) {
	ctx := context.Background()

	t.Run("every field set", func(t *testing.T) {
		g := NewWithT(t)
		name := uniqueName("refund-full")
		g.Expect(k8sClient.Create(ctx, &unstructured.Unstructured{Object: validRefund(name)},
			client.FieldValidation(metav1.FieldValidationStrict))).To(Succeed())

		var got paymentsv1alpha1.PaymentRefund
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &got)).To(Succeed())
		g.Expect(got.Spec).To(Equal(paymentsv1alpha1.PaymentRefundSpec{
			ProviderRef:             paymentsv1alpha1.ProviderReference{Name: "stripe"},
			PaymentJobRef:           paymentsv1alpha1.PaymentJobReference{Name: "invoice-42", IdempotencyKey: "invoice-2026-0042"},
			Amount:                  ptr.To[int64](500),
			Reason:                  paymentsv1alpha1.RefundRequestedByCustomer,
			IdempotencyKey:          "refund-2026-0042-1",
			Metadata:                map[string]string{"ticket": "SUP-7"},
			Suspend:                 ptr.To(true),
			BackoffLimit:            ptr.To[int32](3),
			ActiveDeadlineSeconds:   ptr.To[int64](3600),
			TTLSecondsAfterFinished: ptr.To[int32](86400),
		}), "nothing is defaulted over a value the user set")
		g.Expect(got.Status).To(Equal(paymentsv1alpha1.PaymentRefundStatus{}), "a new refund has no status")
	})

	t.Run("only required fields, defaults applied", func(t *testing.T) {
		g := NewWithT(t)
		refund := &paymentsv1alpha1.PaymentRefund{
			ObjectMeta: metav1.ObjectMeta{Name: uniqueName("refund-minimal"), Namespace: namespace},
			Spec: paymentsv1alpha1.PaymentRefundSpec{
				ProviderRef:   paymentsv1alpha1.ProviderReference{Name: "stripe"},
				PaymentJobRef: paymentsv1alpha1.PaymentJobReference{Name: "invoice-42"},
			},
		}
		g.Expect(k8sClient.Create(ctx, refund)).To(Succeed())

		var got paymentsv1alpha1.PaymentRefund
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(refund), &got)).To(Succeed())
		g.Expect(got.Spec).To(Equal(paymentsv1alpha1.PaymentRefundSpec{
			ProviderRef:   paymentsv1alpha1.ProviderReference{Name: "stripe"},
			PaymentJobRef: paymentsv1alpha1.PaymentJobReference{Name: "invoice-42"},
			BackoffLimit:  ptr.To[int32](6),
		}), "only backoffLimit is defaulted (to 6); the amount (whole charge) and the key (metadata.name) "+
			"default in the controller, not in the stored spec")
	})

	t.Run("every reason", func(t *testing.T) {
		for _, reason := range []paymentsv1alpha1.RefundReason{
			paymentsv1alpha1.RefundDuplicate, paymentsv1alpha1.RefundFraudulent, paymentsv1alpha1.RefundRequestedByCustomer,
		} {
			g := NewWithT(t)
			obj := validRefund(uniqueName("refund-reason"))
			obj["spec"].(map[string]any)["reason"] = string(reason)
			g.Expect(k8sClient.Create(ctx, &unstructured.Unstructured{Object: obj})).To(Succeed(), string(reason))
		}
	})

	t.Run("limits are inclusive", func(t *testing.T) {
		g := NewWithT(t)
		obj := validRefund(uniqueName("refund-limits"))
		spec := obj["spec"].(map[string]any)
		spec["amount"] = int64(1)
		spec["idempotencyKey"] = "A-z_0.9:/" + strings.Repeat("k", 191) // 200 chars
		spec["paymentJobRef"] = map[string]any{
			"name":           strings.Repeat("n", 253),
			"idempotencyKey": "A-z_0.9:/" + strings.Repeat("j", 191),
		}
		spec["backoffLimit"] = int64(100)
		metadata := map[string]any{}
		for i := range 40 {
			metadata[fmt.Sprintf("%040d", i)] = strings.Repeat("v", 500)
		}
		spec["metadata"] = metadata
		g.Expect(k8sClient.Create(ctx, &unstructured.Unstructured{Object: obj})).To(Succeed())
	})
}

func TestPaymentRefundRejectsInvalidSpec(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(spec map[string]any)
		// want are substrings of the API server's message: the field path
		// and what is wrong with it.
		want []string
	}{
		{"providerRef missing", func(s map[string]any) { delete(s, "providerRef") },
			[]string{"spec.providerRef", "Required value"}},
		{"providerRef without a name", func(s map[string]any) { s["providerRef"] = map[string]any{} },
			[]string{"spec.providerRef.name", "Required value"}},
		{"providerRef with an empty name", func(s map[string]any) { s["providerRef"] = map[string]any{"name": ""} },
			[]string{"spec.providerRef.name"}},
		{"paymentJobRef missing", func(s map[string]any) { delete(s, "paymentJobRef") },
			[]string{"spec.paymentJobRef", "Required value"}},
		{"paymentJobRef without a name", func(s map[string]any) {
			s["paymentJobRef"] = map[string]any{"idempotencyKey": "invoice-2026-0042"}
		}, []string{"spec.paymentJobRef.name", "Required value"}},
		{"paymentJobRef with an empty name", func(s map[string]any) { s["paymentJobRef"] = map[string]any{"name": ""} },
			[]string{"spec.paymentJobRef.name"}},
		{"paymentJobRef name of 254 characters", func(s map[string]any) {
			s["paymentJobRef"] = map[string]any{"name": strings.Repeat("n", 254)}
		}, []string{"spec.paymentJobRef.name", "Too long"}},
		{"paymentJobRef idempotencyKey with a space", func(s map[string]any) {
			s["paymentJobRef"] = map[string]any{"name": "invoice-42", "idempotencyKey": "invoice 42"}
		}, []string{"spec.paymentJobRef.idempotencyKey", "should match"}},
		{"paymentJobRef idempotencyKey of 201 characters", func(s map[string]any) {
			s["paymentJobRef"] = map[string]any{"name": "invoice-42", "idempotencyKey": strings.Repeat("k", 201)}
		}, []string{"spec.paymentJobRef.idempotencyKey", "Too long"}},
		{"amount zero", func(s map[string]any) { s["amount"] = int64(0) },
			[]string{"spec.amount", "greater than or equal to 1"}},
		{"amount negative", func(s map[string]any) { s["amount"] = int64(-500) },
			[]string{"spec.amount", "greater than or equal to 1"}},
		{"amount as a decimal", func(s map[string]any) { s["amount"] = "5.00" },
			[]string{"spec.amount", "integer"}},
		{"reason not in the enum", func(s map[string]any) { s["reason"] = "customer_request" },
			[]string{"spec.reason", "Unsupported value", "requested_by_customer"}},
		{"reason in another case", func(s map[string]any) { s["reason"] = "Duplicate" },
			[]string{"spec.reason", "Unsupported value"}},
		{"reason empty", func(s map[string]any) { s["reason"] = "" },
			[]string{"spec.reason", "Unsupported value"}},
		{"idempotencyKey of 201 characters", func(s map[string]any) { s["idempotencyKey"] = strings.Repeat("k", 201) },
			[]string{"spec.idempotencyKey", "Too long"}},
		{"idempotencyKey with a space", func(s map[string]any) { s["idempotencyKey"] = "refund 42" },
			[]string{"spec.idempotencyKey", "should match"}},
		{"idempotencyKey not ASCII", func(s map[string]any) { s["idempotencyKey"] = "rückerstattung" },
			[]string{"spec.idempotencyKey", "should match"}},
		{"idempotencyKey empty", func(s map[string]any) { s["idempotencyKey"] = "" },
			[]string{"spec.idempotencyKey"}},
		{"41 metadata entries", func(s map[string]any) {
			m := map[string]any{}
			for i := range 41 {
				m[fmt.Sprintf("k%d", i)] = "v"
			}
			s["metadata"] = m
		}, []string{"spec.metadata", "Too many", "at most 40"}},
		{"metadata key of 41 characters", func(s map[string]any) {
			s["metadata"] = map[string]any{strings.Repeat("k", 41): "v"}
		}, []string{"spec.metadata", "keys must be 1 to 40 characters"}},
		{"metadata key empty", func(s map[string]any) { s["metadata"] = map[string]any{"": "v"} },
			[]string{"spec.metadata", "keys must be 1 to 40 characters"}},
		{"metadata value of 501 characters", func(s map[string]any) {
			s["metadata"] = map[string]any{"ticket": strings.Repeat("v", 501)}
		}, []string{"spec.metadata", "values must be at most 500 characters"}},
		{"backoffLimit negative", func(s map[string]any) { s["backoffLimit"] = int64(-1) },
			[]string{"spec.backoffLimit", "greater than or equal to 0"}},
		{"backoffLimit over 100", func(s map[string]any) { s["backoffLimit"] = int64(101) },
			[]string{"spec.backoffLimit", "less than or equal to 100"}},
		{"activeDeadlineSeconds zero", func(s map[string]any) { s["activeDeadlineSeconds"] = int64(0) },
			[]string{"spec.activeDeadlineSeconds", "greater than or equal to 1"}},
		{"ttlSecondsAfterFinished negative", func(s map[string]any) { s["ttlSecondsAfterFinished"] = int64(-1) },
			[]string{"spec.ttlSecondsAfterFinished", "greater than or equal to 0"}},
		{"unknown field", func(s map[string]any) { s["currency"] = "usd" },
			[]string{"spec.currency", "unknown field"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := validRefund(uniqueName("refund-invalid"))
			tt.mutate(obj["spec"].(map[string]any))

			err := k8sClient.Create(context.Background(), &unstructured.Unstructured{Object: obj},
				client.FieldValidation(metav1.FieldValidationStrict))
			g.Expect(err).To(HaveOccurred())
			g.Expect(apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)).To(BeTrue(), "got %v", err)
			for _, want := range tt.want {
				g.Expect(err.Error()).To(ContainSubstring(want))
			}
			t.Logf("rejected: %v", err)
		})
	}
}

// createRefund creates obj and reads it back typed.
func createRefund(g Gomega, obj map[string]any) *paymentsv1alpha1.PaymentRefund {
	ctx := context.Background()
	u := &unstructured.Unstructured{Object: obj}
	g.Expect(k8sClient.Create(ctx, u)).To(Succeed())
	var refund paymentsv1alpha1.PaymentRefund
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(u), &refund)).To(Succeed())
	return &refund
}

func TestPaymentRefundSpecIsImmutable(t *testing.T) {
	type spec = paymentsv1alpha1.PaymentRefundSpec
	tests := []struct {
		name string
		// strip removes fields from the created manifest, so that a test
		// can add them on update.
		strip  []string
		field  string
		mutate func(s *spec)
	}{
		{"amount changed", nil, "spec.amount", func(s *spec) { s.Amount = ptr.To[int64](501) }},
		{"amount removed", nil, "spec.amount", func(s *spec) { s.Amount = nil }},
		{"amount added", []string{"amount"}, "spec.amount", func(s *spec) { s.Amount = ptr.To[int64](100) }},
		{"reason changed", nil, "spec.reason", func(s *spec) { s.Reason = paymentsv1alpha1.RefundDuplicate }},
		{"reason removed", nil, "spec.reason", func(s *spec) { s.Reason = "" }},
		{"reason added", []string{"reason"}, "spec.reason", func(s *spec) { s.Reason = paymentsv1alpha1.RefundFraudulent }},
		{"idempotencyKey changed", nil, "spec.idempotencyKey", func(s *spec) { s.IdempotencyKey = "refund-2026-0042-2" }},
		{"idempotencyKey removed", nil, "spec.idempotencyKey", func(s *spec) { s.IdempotencyKey = "" }},
		{"idempotencyKey added", []string{"idempotencyKey"}, "spec.idempotencyKey", func(s *spec) { s.IdempotencyKey = "refund-9" }},
		{"paymentJobRef name", nil, "spec.paymentJobRef", func(s *spec) { s.PaymentJobRef.Name = "invoice-43" }},
		{"paymentJobRef idempotencyKey changed", nil, "spec.paymentJobRef", func(s *spec) { s.PaymentJobRef.IdempotencyKey = "invoice-2026-0043" }},
		{"paymentJobRef idempotencyKey removed", nil, "spec.paymentJobRef", func(s *spec) { s.PaymentJobRef.IdempotencyKey = "" }},
		{"paymentJobRef idempotencyKey added", []string{"paymentJobRef"}, "spec.paymentJobRef", func(s *spec) { s.PaymentJobRef.IdempotencyKey = "invoice-9" }},
		{"providerRef", nil, "spec.providerRef", func(s *spec) { s.ProviderRef.Name = "other" }},
		{"metadata value", nil, "spec.metadata", func(s *spec) { s.Metadata["ticket"] = "SUP-8" }},
		{"metadata entry added", nil, "spec.metadata", func(s *spec) { s.Metadata["agent"] = "ana" }},
		{"metadata removed", nil, "spec.metadata", func(s *spec) { s.Metadata = nil }},
		{"metadata added", []string{"metadata"}, "spec.metadata", func(s *spec) { s.Metadata = map[string]string{"ticket": "SUP-9"} }},
		{"backoffLimit changed", nil, "spec.backoffLimit", func(s *spec) { s.BackoffLimit = ptr.To[int32](1) }},
		{"backoffLimit changed from its default", []string{"backoffLimit"}, "spec.backoffLimit", func(s *spec) { s.BackoffLimit = ptr.To[int32](7) }},
		{"activeDeadlineSeconds changed", nil, "spec.activeDeadlineSeconds", func(s *spec) { s.ActiveDeadlineSeconds = ptr.To[int64](60) }},
		{"activeDeadlineSeconds removed", nil, "spec.activeDeadlineSeconds", func(s *spec) { s.ActiveDeadlineSeconds = nil }},
		{"activeDeadlineSeconds added", []string{"activeDeadlineSeconds"}, "spec.activeDeadlineSeconds", func(s *spec) { s.ActiveDeadlineSeconds = ptr.To[int64](60) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			obj := validRefund(uniqueName("refund-immutable"))
			for _, field := range tt.strip {
				delete(obj["spec"].(map[string]any), field)
			}
			if _, ok := obj["spec"].(map[string]any)["paymentJobRef"]; !ok {
				obj["spec"].(map[string]any)["paymentJobRef"] = map[string]any{"name": "invoice-42"}
			}
			refund := createRefund(g, obj)
			before := refund.Spec.DeepCopy()
			tt.mutate(&refund.Spec)

			err := k8sClient.Update(ctx, refund)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.field))
			g.Expect(err.Error()).To(ContainSubstring("is immutable"))

			var stored paymentsv1alpha1.PaymentRefund
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(refund), &stored)).To(Succeed())
			g.Expect(stored.Spec).To(Equal(*before), "a rejected update changes nothing")
		})
	}
}

func TestPaymentRefundMutableFields(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(s *paymentsv1alpha1.PaymentRefundSpec)
	}{
		{"suspend true -> false", func(s *paymentsv1alpha1.PaymentRefundSpec) { s.Suspend = ptr.To(false) }},
		{"suspend removed", func(s *paymentsv1alpha1.PaymentRefundSpec) { s.Suspend = nil }},
		{"ttlSecondsAfterFinished", func(s *paymentsv1alpha1.PaymentRefundSpec) { s.TTLSecondsAfterFinished = ptr.To[int32](60) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			refund := createRefund(g, validRefund(uniqueName("refund-mutable")))
			generation := refund.Generation
			tt.mutate(&refund.Spec)
			want := refund.Spec

			g.Expect(k8sClient.Update(ctx, refund)).To(Succeed())
			var got paymentsv1alpha1.PaymentRefund
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(refund), &got)).To(Succeed())
			g.Expect(got.Spec).To(Equal(want))
			g.Expect(got.Generation).To(Equal(generation+1), "a spec change moves the generation")
		})
	}

	t.Run("suspend added to a refund created without it", func(t *testing.T) {
		g := NewWithT(t)
		obj := validRefund(uniqueName("refund-mutable"))
		delete(obj["spec"].(map[string]any), "suspend")
		refund := createRefund(g, obj)
		refund.Spec.Suspend = ptr.To(true)
		g.Expect(k8sClient.Update(context.Background(), refund)).To(Succeed())
	})
}

func TestPaymentRefundStatusUpdateNeedsNoSpec(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	refund := createRefund(g, validRefund(uniqueName("refund-status")))

	// Only metadata and status: the spec is the zero value, which would be
	// invalid (no references) if the status subresource looked at it.
	statusOnly := &paymentsv1alpha1.PaymentRefund{
		ObjectMeta: metav1.ObjectMeta{Name: refund.Name, Namespace: namespace, ResourceVersion: refund.ResourceVersion},
		Status: paymentsv1alpha1.PaymentRefundStatus{
			PaymentStatus: paymentsv1alpha1.PaymentStatus{Phase: paymentsv1alpha1.PhaseProcessing, Attempts: 1},
			Charge:        &paymentsv1alpha1.RefundedCharge{ID: "pi_123", Amount: 2000, Currency: "usd"},
		},
	}
	g.Expect(k8sClient.Status().Update(ctx, statusOnly)).To(Succeed())

	var got paymentsv1alpha1.PaymentRefund
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(refund), &got)).To(Succeed())
	g.Expect(got.Spec).To(Equal(refund.Spec), "the status subresource leaves the spec alone")
	g.Expect(got.Status.Charge).To(Equal(statusOnly.Status.Charge))
	g.Expect(got.Generation).To(Equal(refund.Generation), "a status write does not move the generation")

	t.Run("a charge without an id is rejected", func(t *testing.T) {
		g := NewWithT(t)
		err := k8sClient.Status().Update(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": paymentsv1alpha1.GroupVersion.String(), "kind": "PaymentRefund",
			"metadata": map[string]any{"name": got.Name, "namespace": namespace, "resourceVersion": got.ResourceVersion},
			"status":   map[string]any{"charge": map[string]any{"currency": "usd"}},
		}})
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		g.Expect(err.Error()).To(ContainSubstring("status.charge.id"))
	})
}

func TestPaymentRefundPrinterColumns(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	refund := createRefund(g, validRefund(uniqueName("refund-printed")))
	refund.Status = paymentsv1alpha1.PaymentRefundStatus{
		PaymentStatus: paymentsv1alpha1.PaymentStatus{
			Phase:            paymentsv1alpha1.PhaseCompleted,
			Attempts:         1,
			ProviderResponse: &paymentsv1alpha1.ProviderResponse{ID: "re_123", Status: "succeeded", Amount: 500, Currency: "usd"},
		},
		Charge: &paymentsv1alpha1.RefundedCharge{ID: "pi_123", Amount: 2000, Currency: "usd"},
	}
	g.Expect(k8sClient.Status().Update(ctx, refund)).To(Succeed())

	// What kubectl get prefund shows: the server-side table.
	httpClient, err := rest.HTTPClientFor(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	url := fmt.Sprintf("%s/apis/%s/namespaces/%s/paymentrefunds/%s",
		strings.TrimSuffix(env.Config.Host, "/"), paymentsv1alpha1.GroupVersion.String(), namespace, refund.Name)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	g.Expect(err).NotTo(HaveOccurred())
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := httpClient.Do(req)
	g.Expect(err).NotTo(HaveOccurred())
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resp.StatusCode).To(Equal(http.StatusOK), string(body))

	var table metav1.Table
	g.Expect(json.Unmarshal(body, &table)).To(Succeed())
	columns := make([]string, 0, len(table.ColumnDefinitions))
	for _, c := range table.ColumnDefinitions {
		columns = append(columns, c.Name)
	}
	g.Expect(columns).To(Equal([]string{"Name", "Phase", "Payment", "Amount", "Refunded", "Currency", "Provider", "Refund", "Attempts", "Age"}))
	g.Expect(table.Rows).To(HaveLen(1))
	g.Expect(table.Rows[0].Cells[:9]).To(Equal([]any{
		refund.Name, "Completed", "invoice-42", amountCell(refund), float64(500), "usd", "stripe", "re_123", float64(1),
	}), "the amount asked and the amount refunded, not the charge's")
}

// amountCell is the Amount column of refund: spec.amount, or nothing (the
// whole charge).
func amountCell(refund *paymentsv1alpha1.PaymentRefund) any {
	if refund.Spec.Amount == nil {
		return nil
	}
	return float64(*refund.Spec.Amount)
}

func TestPaymentRefundPhaseIsSelectable(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	refund := createRefund(g, validRefund(uniqueName("refund-selected")))
	refund.Status.Phase = paymentsv1alpha1.PhaseFailed
	g.Expect(k8sClient.Status().Update(ctx, refund)).To(Succeed())
	unselected := createRefund(g, validRefund(uniqueName("refund-unselected")))

	// kubectl get prefund --field-selector status.phase=Failed
	var failed paymentsv1alpha1.PaymentRefundList
	g.Expect(k8sClient.List(ctx, &failed, client.InNamespace(namespace),
		client.MatchingFields{"status.phase": string(paymentsv1alpha1.PhaseFailed)})).To(Succeed())
	names := make([]string, 0, len(failed.Items))
	for _, r := range failed.Items {
		g.Expect(r.Status.Phase).To(Equal(paymentsv1alpha1.PhaseFailed))
		names = append(names, r.Name)
	}
	g.Expect(names).To(ContainElement(refund.Name))
	g.Expect(names).NotTo(ContainElement(unselected.Name))
}
