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
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/testenv"
)

func TestControlPlaneIsSelfBuilt(t *testing.T) {
	g := NewWithT(t)
	// The version is stamped into the binary that make envtest-assets builds;
	// an unstamped build from source would report v0.0.0-master.
	g.Expect(env.ServerVersion).To(Equal(testenv.ExpectedVersion()))
	g.Expect(env.ServerVersion).To(HavePrefix("v1."))
}

func TestPaymentJobIsDiscoverable(t *testing.T) {
	g := NewWithT(t)
	resources, err := dc.ServerResourcesForGroupVersion(paymentsv1alpha1.GroupVersion.String())
	g.Expect(err).NotTo(HaveOccurred())

	byName := map[string]metav1.APIResource{}
	for _, r := range resources.APIResources {
		byName[r.Name] = r
	}
	g.Expect(byName).To(HaveKey("paymentjobs"))
	g.Expect(byName).To(HaveKey("paymentjobs/status"))
	g.Expect(byName).To(HaveKey("paymentproviders"))
	g.Expect(byName).To(HaveKey("paymentproviders/status"))

	jobs := byName["paymentjobs"]
	g.Expect(jobs.Namespaced).To(BeTrue())
	g.Expect(jobs.Kind).To(Equal("PaymentJob"))
	g.Expect(jobs.ShortNames).To(ConsistOf("pj"))
	g.Expect(jobs.Categories).To(ConsistOf("payments"))
	g.Expect(byName["paymentproviders"].Namespaced).To(BeTrue())
	g.Expect(byName["paymentproviders"].Categories).To(ConsistOf("payments"))
}

// validJob is a PaymentJob manifest as a user writes it, with every field set.
func validJob(name string) map[string]any {
	return map[string]any{
		"apiVersion": paymentsv1alpha1.GroupVersion.String(),
		"kind":       "PaymentJob",
		"metadata":   map[string]any{"name": name, "namespace": namespace},
		"spec": map[string]any{
			"providerRef":           map[string]any{"name": "stripe"},
			"amount":                int64(2000),
			"currency":              "usd",
			"idempotencyKey":        "invoice-2026-0042",
			"customer":              "cus_123",
			"paymentMethod":         "pm_card_visa",
			"description":           "March invoice",
			"metadata":              map[string]any{"invoice": "42"},
			"suspend":               false,
			"backoffLimit":          int64(3),
			"activeDeadlineSeconds": int64(3600),
		},
	}
}

func uniqueName(prefix string) string {
	return prefix + "-" + rand.String(6)
}

func TestPaymentJobAcceptsValidObjectsAndRoundTrips(t *testing.T) {
	ctx := context.Background()

	t.Run("every field set", func(t *testing.T) {
		g := NewWithT(t)
		name := uniqueName("full")
		g.Expect(k8sClient.Create(ctx, &unstructured.Unstructured{Object: validJob(name)})).To(Succeed())

		var got paymentsv1alpha1.PaymentJob
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &got)).To(Succeed())
		g.Expect(got.Spec).To(Equal(paymentsv1alpha1.PaymentJobSpec{
			ProviderRef:           paymentsv1alpha1.ProviderReference{Name: "stripe"},
			Amount:                2000,
			Currency:              "usd",
			IdempotencyKey:        "invoice-2026-0042",
			Customer:              "cus_123",
			PaymentMethod:         "pm_card_visa",
			Description:           "March invoice",
			Metadata:              map[string]string{"invoice": "42"},
			Suspend:               ptr.To(false),
			BackoffLimit:          ptr.To[int32](3),
			ActiveDeadlineSeconds: ptr.To[int64](3600),
		}))
		g.Expect(got.Status).To(Equal(paymentsv1alpha1.PaymentJobStatus{}), "a new job has no status")
	})

	t.Run("only required fields, defaults applied", func(t *testing.T) {
		g := NewWithT(t)
		job := &paymentsv1alpha1.PaymentJob{
			ObjectMeta: metav1.ObjectMeta{Name: uniqueName("minimal"), Namespace: namespace},
			Spec: paymentsv1alpha1.PaymentJobSpec{
				ProviderRef: paymentsv1alpha1.ProviderReference{Name: "stripe"},
				Amount:      1,
				Currency:    "jpy",
			},
		}
		g.Expect(k8sClient.Create(ctx, job)).To(Succeed())

		var got paymentsv1alpha1.PaymentJob
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(job), &got)).To(Succeed())
		g.Expect(got.Spec.Amount).To(Equal(int64(1)))
		g.Expect(got.Spec.Currency).To(Equal("jpy"))
		g.Expect(got.Spec.IdempotencyKey).To(BeEmpty(), "the key defaults to metadata.name in the controller, not in the stored spec")
		g.Expect(got.Spec.BackoffLimit).To(Equal(ptr.To[int32](6)), "backoffLimit defaults to 6")
	})

	t.Run("limits are inclusive", func(t *testing.T) {
		g := NewWithT(t)
		obj := validJob(uniqueName("limits"))
		spec := obj["spec"].(map[string]any)
		spec["idempotencyKey"] = "A-z_0.9:/" + strings.Repeat("k", 191) // 200 chars
		spec["description"] = strings.Repeat("d", 1000)
		spec["amount"] = int64(9223372036854775807)
		metadata := map[string]any{}
		for i := range 40 {
			metadata[fmt.Sprintf("%040d", i)] = strings.Repeat("v", 500)
		}
		spec["metadata"] = metadata
		g.Expect(k8sClient.Create(ctx, &unstructured.Unstructured{Object: obj})).To(Succeed())
	})
}

func TestPaymentJobRejectsInvalidSpec(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(spec map[string]any)
		// want are substrings of the API server's message: the field path
		// and what is wrong with it.
		want []string
	}{
		{"amount zero", func(s map[string]any) { s["amount"] = int64(0) },
			[]string{"spec.amount", "greater than or equal to 1"}},
		{"amount negative", func(s map[string]any) { s["amount"] = int64(-5) },
			[]string{"spec.amount", "greater than or equal to 1"}},
		{"amount as a decimal", func(s map[string]any) { s["amount"] = "20.00" },
			[]string{"spec.amount", "integer"}},
		{"amount missing", func(s map[string]any) { delete(s, "amount") },
			[]string{"spec.amount", "Required value"}},
		{"currency of four letters", func(s map[string]any) { s["currency"] = "USDX" },
			[]string{"spec.currency"}},
		{"currency not lower case", func(s map[string]any) { s["currency"] = "Usd" },
			[]string{"spec.currency", "^[a-z]{3}$"}},
		{"currency missing", func(s map[string]any) { delete(s, "currency") },
			[]string{"spec.currency", "Required value"}},
		{"idempotencyKey of 201 characters", func(s map[string]any) { s["idempotencyKey"] = strings.Repeat("k", 201) },
			[]string{"spec.idempotencyKey", "Too long"}},
		{"idempotencyKey with a space", func(s map[string]any) { s["idempotencyKey"] = "invoice 42" },
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
		{"metadata value of 501 characters", func(s map[string]any) {
			s["metadata"] = map[string]any{"invoice": strings.Repeat("v", 501)}
		}, []string{"spec.metadata", "values must be at most 500 characters"}},
		{"description of 1001 characters", func(s map[string]any) { s["description"] = strings.Repeat("d", 1001) },
			[]string{"spec.description", "Too long"}},
		{"providerRef missing", func(s map[string]any) { delete(s, "providerRef") },
			[]string{"spec.providerRef", "Required value"}},
		{"providerRef without a name", func(s map[string]any) { s["providerRef"] = map[string]any{"name": ""} },
			[]string{"spec.providerRef.name"}},
		{"backoffLimit negative", func(s map[string]any) { s["backoffLimit"] = int64(-1) },
			[]string{"spec.backoffLimit", "greater than or equal to 0"}},
		{"activeDeadlineSeconds zero", func(s map[string]any) { s["activeDeadlineSeconds"] = int64(0) },
			[]string{"spec.activeDeadlineSeconds", "greater than or equal to 1"}},
		{"unknown field", func(s map[string]any) { s["amountInCents"] = int64(5) },
			[]string{"spec.amountInCents", "unknown field"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := validJob(uniqueName("invalid"))
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

func TestPaymentJobSpecIsImmutable(t *testing.T) {
	tests := []struct {
		name   string
		field  string
		mutate func(spec *paymentsv1alpha1.PaymentJobSpec)
	}{
		{"amount", "spec.amount", func(s *paymentsv1alpha1.PaymentJobSpec) { s.Amount = 2001 }},
		{"currency", "spec.currency", func(s *paymentsv1alpha1.PaymentJobSpec) { s.Currency = "eur" }},
		{"idempotencyKey changed", "spec.idempotencyKey", func(s *paymentsv1alpha1.PaymentJobSpec) { s.IdempotencyKey = "invoice-2026-0043" }},
		{"idempotencyKey removed", "spec.idempotencyKey", func(s *paymentsv1alpha1.PaymentJobSpec) { s.IdempotencyKey = "" }},
		{"providerRef", "spec.providerRef", func(s *paymentsv1alpha1.PaymentJobSpec) { s.ProviderRef.Name = "other" }},
		{"customer", "spec.customer", func(s *paymentsv1alpha1.PaymentJobSpec) { s.Customer = "cus_456" }},
		{"paymentMethod", "spec.paymentMethod", func(s *paymentsv1alpha1.PaymentJobSpec) { s.PaymentMethod = "pm_card_mastercard" }},
		{"description", "spec.description", func(s *paymentsv1alpha1.PaymentJobSpec) { s.Description = "April invoice" }},
		{"metadata", "spec.metadata", func(s *paymentsv1alpha1.PaymentJobSpec) { s.Metadata["invoice"] = "43" }},
		{"backoffLimit", "spec.backoffLimit", func(s *paymentsv1alpha1.PaymentJobSpec) { s.BackoffLimit = ptr.To[int32](1) }},
		{"activeDeadlineSeconds", "spec.activeDeadlineSeconds", func(s *paymentsv1alpha1.PaymentJobSpec) { s.ActiveDeadlineSeconds = nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			name := uniqueName("immutable")
			g.Expect(k8sClient.Create(ctx, &unstructured.Unstructured{Object: validJob(name)})).To(Succeed())

			var job paymentsv1alpha1.PaymentJob
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &job)).To(Succeed())
			before := job.Spec.DeepCopy()
			tt.mutate(&job.Spec)

			err := k8sClient.Update(ctx, &job)
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tt.field))
			g.Expect(err.Error()).To(ContainSubstring("is immutable"))

			var stored paymentsv1alpha1.PaymentJob
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&job), &stored)).To(Succeed())
			g.Expect(stored.Spec).To(Equal(*before), "a rejected update changes nothing")
		})
	}

	t.Run("idempotencyKey added to a job that defaulted it", func(t *testing.T) {
		g := NewWithT(t)
		ctx := context.Background()
		obj := validJob(uniqueName("immutable"))
		delete(obj["spec"].(map[string]any), "idempotencyKey")
		u := &unstructured.Unstructured{Object: obj}
		g.Expect(k8sClient.Create(ctx, u)).To(Succeed())

		g.Expect(unstructured.SetNestedField(u.Object, "invoice-9", "spec", "idempotencyKey")).To(Succeed())
		err := k8sClient.Update(ctx, u)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		g.Expect(err.Error()).To(ContainSubstring("spec.idempotencyKey"))
	})
}

func TestPaymentJobSuspendIsMutable(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	job := &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: uniqueName("suspended"), Namespace: namespace},
		Spec: paymentsv1alpha1.PaymentJobSpec{
			ProviderRef: paymentsv1alpha1.ProviderReference{Name: "stripe"},
			Amount:      500,
			Currency:    "eur",
			Suspend:     ptr.To(true),
		},
	}
	g.Expect(k8sClient.Create(ctx, job)).To(Succeed())
	generation := job.Generation

	job.Spec.Suspend = ptr.To(false)
	g.Expect(k8sClient.Update(ctx, job)).To(Succeed(), "suspend true -> false is accepted")

	var got paymentsv1alpha1.PaymentJob
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(job), &got)).To(Succeed())
	g.Expect(got.Spec.Suspend).To(Equal(ptr.To(false)))
	g.Expect(got.Generation).To(Equal(generation+1), "a spec change moves the generation")
}

func TestPaymentJobStatusUpdateNeedsNoSpec(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	name := uniqueName("status")
	g.Expect(k8sClient.Create(ctx, &unstructured.Unstructured{Object: validJob(name)})).To(Succeed())
	var job paymentsv1alpha1.PaymentJob
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &job)).To(Succeed())

	// Only metadata and status: the spec is the zero value, which would be
	// invalid (amount 0, no currency) if the status subresource looked at it.
	now := metav1.Now()
	statusOnly := &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, ResourceVersion: job.ResourceVersion},
		Status: paymentsv1alpha1.PaymentJobStatus{PaymentStatus: paymentsv1alpha1.PaymentStatus{
			Phase:          paymentsv1alpha1.PhaseProcessing,
			IdempotencyKey: namespace + "/invoice-2026-0042",
			RequestHash:    "sha256:0123",
			Attempts:       1,
			Claim: &paymentsv1alpha1.Claim{
				Holder:     "manager-0/3f2a",
				AcquiredAt: metav1.NewMicroTime(now.Time),
				ExpiresAt:  metav1.NewMicroTime(now.Add(60e9)),
			},
			StartedAt: &now,
		}},
	}
	staleResourceVersion := job.ResourceVersion
	g.Expect(k8sClient.Status().Update(ctx, statusOnly)).To(Succeed())

	var got paymentsv1alpha1.PaymentJob
	g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(&job), &got)).To(Succeed())
	g.Expect(got.Spec).To(Equal(job.Spec), "the status subresource leaves the spec alone")
	g.Expect(got.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
	g.Expect(got.Status.Claim.Holder).To(Equal("manager-0/3f2a"))
	g.Expect(got.Generation).To(Equal(job.Generation), "a status write does not move the generation")

	t.Run("stale resourceVersion is a conflict", func(t *testing.T) {
		g := NewWithT(t)
		stale := statusOnly.DeepCopy()
		stale.ResourceVersion = staleResourceVersion
		stale.Status.Attempts = 2
		err := k8sClient.Status().Update(ctx, stale)
		g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "got %v", err)
	})

	t.Run("unknown phase is rejected", func(t *testing.T) {
		g := NewWithT(t)
		bad := got.DeepCopy()
		bad.Status.Phase = "Charged"
		err := k8sClient.Status().Update(ctx, bad)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
		g.Expect(err.Error()).To(ContainSubstring("status.phase"))
	})
}

func TestPaymentJobPrinterColumns(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	name := uniqueName("printed")
	g.Expect(k8sClient.Create(ctx, &unstructured.Unstructured{Object: validJob(name)})).To(Succeed())
	var job paymentsv1alpha1.PaymentJob
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &job)).To(Succeed())
	job.Status.PaymentStatus = paymentsv1alpha1.PaymentStatus{
		Phase:            paymentsv1alpha1.PhaseCompleted,
		Attempts:         1,
		ProviderResponse: &paymentsv1alpha1.ProviderResponse{ID: "pi_123", Status: "succeeded", Amount: 2000, Currency: "usd"},
	}
	g.Expect(k8sClient.Status().Update(ctx, &job)).To(Succeed())

	// What kubectl get pj shows: the server-side table.
	httpClient, err := rest.HTTPClientFor(env.Config)
	g.Expect(err).NotTo(HaveOccurred())
	url := fmt.Sprintf("%s/apis/%s/namespaces/%s/paymentjobs/%s",
		strings.TrimSuffix(env.Config.Host, "/"), paymentsv1alpha1.GroupVersion.String(), namespace, name)
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
	g.Expect(columns).To(Equal([]string{"Name", "Phase", "Amount", "Currency", "Provider", "Charge", "Attempts", "Age"}))
	g.Expect(table.Rows).To(HaveLen(1))
	g.Expect(table.Rows[0].Cells[:7]).To(Equal([]any{name, "Completed", float64(2000), "usd", "stripe", "pi_123", float64(1)}))
}
