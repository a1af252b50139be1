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

	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// TestAdmissionPolicies proves, on the API server, the mutating policies of
// config/policy that serve the ledger and resolutions: the finalizer added
// at create (one API write less per job), the resolver's name as the API
// server authenticated them (it cannot be forged), and a finished job
// released to the operator when someone tries to resolve it.
func TestAdmissionPolicies(t *testing.T) {
	installPolicies(t, NewWithT(t))
	ctx := context.Background()

	job := func(prefix string) *paymentsv1alpha1.PaymentJob {
		return &paymentsv1alpha1.PaymentJob{
			ObjectMeta: metav1.ObjectMeta{Name: uniqueName(prefix), Namespace: namespace},
			Spec: paymentsv1alpha1.PaymentJobSpec{
				ProviderRef: paymentsv1alpha1.ProviderReference{Name: "stripe"},
				Amount:      900,
				Currency:    "usd",
			},
		}
	}

	t.Run("the finalizer is added at create", func(t *testing.T) {
		const other = "example.com/keep"
		tests := []struct {
			name       string
			finalizers []string
			want       []string
		}{
			{"no finalizers", nil, []string{paymentsv1alpha1.Finalizer}},
			{"another finalizer", []string{other}, []string{other, paymentsv1alpha1.Finalizer}},
			{"already there", []string{paymentsv1alpha1.Finalizer}, []string{paymentsv1alpha1.Finalizer}},
			{"already there among others", []string{other, paymentsv1alpha1.Finalizer}, []string{other, paymentsv1alpha1.Finalizer}},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				g := NewWithT(t)
				pj := job("guarded")
				pj.Finalizers = tt.finalizers
				g.Expect(k8sClient.Create(ctx, pj)).To(Succeed())
				stored := &paymentsv1alpha1.PaymentJob{}
				g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pj), stored)).To(Succeed())
				g.Expect(stored.Finalizers).To(ConsistOf(tt.want))
			})
		}

		// Only at create: the operator's finish removes the finalizer, and
		// the job must be able to go.
		g := NewWithT(t)
		pj := job("finishing")
		g.Expect(k8sClient.Create(ctx, pj)).To(Succeed())
		g.Expect(pj.Finalizers).To(ConsistOf(paymentsv1alpha1.Finalizer))
		pj.Finalizers = nil
		g.Expect(k8sClient.Update(ctx, pj)).To(Succeed())
		g.Expect(pj.Finalizers).To(BeEmpty(), "the policy must not add the finalizer back on update")
	})

	t.Run("resolved-by names the user the API server authenticated", func(t *testing.T) {
		g := NewWithT(t)
		review := &authenticationv1.SelfSubjectReview{}
		g.Expect(k8sClient.Create(ctx, review)).To(Succeed())
		admin := review.Status.UserInfo.Username
		g.Expect(admin).NotTo(BeEmpty())

		// alice is a user of her own: the name comes from the request, not
		// from the client's certificate or the object.
		cfg := rest.CopyConfig(env.Config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "alice", Groups: []string{"system:masters"}}
		alice, err := client.New(cfg, client.Options{Scheme: k8sClient.Scheme()})
		g.Expect(err).NotTo(HaveOccurred())

		pj := job("resolved")
		pj.Annotations = map[string]string{
			paymentsv1alpha1.AnnotationResolve:    "not-charged",
			paymentsv1alpha1.AnnotationResolvedBy: "mallory",
		}
		g.Expect(alice.Create(ctx, pj)).To(Succeed())
		g.Expect(pj.Annotations).To(HaveKeyWithValue(paymentsv1alpha1.AnnotationResolvedBy, "alice"),
			"a resolve at create is attributed to the creator, whatever the manifest says")

		// Each step is an update of the stored job by the administrator.
		steps := []struct {
			name   string
			change func(annotations map[string]string)
			want   string // "" means no resolved-by
		}{
			{"resolved-by forged", func(a map[string]string) {
				a[paymentsv1alpha1.AnnotationResolvedBy] = "mallory"
			}, "alice"},
			{"resolved-by removed while resolve stays", func(a map[string]string) {
				delete(a, paymentsv1alpha1.AnnotationResolvedBy)
			}, "alice"},
			{"an unrelated annotation", func(a map[string]string) {
				a["team"] = "billing"
			}, "alice"},
			{"resolve changed, with a forged resolved-by", func(a map[string]string) {
				a[paymentsv1alpha1.AnnotationResolve] = "charged=ch_42"
				a[paymentsv1alpha1.AnnotationResolvedBy] = "alice"
			}, admin},
			{"resolve removed", func(a map[string]string) {
				delete(a, paymentsv1alpha1.AnnotationResolve)
			}, ""},
			{"resolved-by added without resolve", func(a map[string]string) {
				a[paymentsv1alpha1.AnnotationResolvedBy] = "mallory"
			}, ""},
			{"resolve added again", func(a map[string]string) {
				a[paymentsv1alpha1.AnnotationResolve] = "not-charged"
			}, admin},
		}
		for _, step := range steps {
			step.change(pj.Annotations)
			g.Expect(k8sClient.Update(ctx, pj)).To(Succeed(), step.name)
			stored := &paymentsv1alpha1.PaymentJob{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pj), stored)).To(Succeed())
			if step.want == "" {
				g.Expect(stored.Annotations).NotTo(HaveKey(paymentsv1alpha1.AnnotationResolvedBy), step.name)
			} else {
				g.Expect(stored.Annotations).To(HaveKeyWithValue(paymentsv1alpha1.AnnotationResolvedBy, step.want), step.name)
			}
			pj = stored
		}

		// A job created without resolve cannot carry a resolved-by either.
		forged := job("forged")
		forged.Annotations = map[string]string{paymentsv1alpha1.AnnotationResolvedBy: "alice"}
		g.Expect(k8sClient.Create(ctx, forged)).To(Succeed())
		g.Expect(forged.Annotations).NotTo(HaveKey(paymentsv1alpha1.AnnotationResolvedBy))
	})

	t.Run("a resolve on a finished job releases it to the operator", func(t *testing.T) {
		g := NewWithT(t)
		pj := job("finished")
		g.Expect(k8sClient.Create(ctx, pj)).To(Succeed())
		pj.Status.Phase = paymentsv1alpha1.PhaseCompleted
		g.Expect(k8sClient.Status().Update(ctx, pj)).To(Succeed())
		// finish is the operator's finish: finalizer off, label on, one write.
		finish := func(step string) {
			pj.Finalizers = nil
			pj.Labels = map[string]string{paymentsv1alpha1.LabelFinished: "true"}
			g.Expect(k8sClient.Update(ctx, pj)).To(Succeed(), step)
			g.Expect(pj.Labels).To(HaveKey(paymentsv1alpha1.LabelFinished), step)
		}
		finish("finish")

		steps := []struct {
			name     string
			change   func(annotations map[string]string)
			released bool
		}{
			{"an unrelated annotation", func(a map[string]string) { a["team"] = "billing" }, false},
			{"resolve added", func(a map[string]string) { a[paymentsv1alpha1.AnnotationResolve] = "not-charged" }, true},
			{"resolve unchanged, another annotation changed", func(a map[string]string) { a["team"] = "finance" }, false},
			{"resolved-by forged", func(a map[string]string) { a[paymentsv1alpha1.AnnotationResolvedBy] = "mallory" }, false},
			{"resolve changed", func(a map[string]string) { a[paymentsv1alpha1.AnnotationResolve] = "charged=ch_42" }, true},
			{"resolve removed", func(a map[string]string) { delete(a, paymentsv1alpha1.AnnotationResolve) }, false},
		}
		for _, step := range steps {
			if pj.Annotations == nil {
				pj.Annotations = map[string]string{}
			}
			step.change(pj.Annotations)
			g.Expect(k8sClient.Update(ctx, pj)).To(Succeed(), step.name)
			if step.released {
				g.Expect(pj.Labels).NotTo(HaveKey(paymentsv1alpha1.LabelFinished), step.name)
				finish(step.name + ", then the operator's finish again")
			} else {
				g.Expect(pj.Labels).To(HaveKeyWithValue(paymentsv1alpha1.LabelFinished, "true"), step.name)
			}
		}
	})
}
