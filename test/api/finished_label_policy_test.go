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
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// installPolicies creates every object of config/policy, as config/default
// does, and waits until the API server serves each policy, so that a test
// sees them from its first request. When the test ends it removes them and
// waits until they are no longer served, so that the tests after it see an
// API server without them.
func installPolicies(t *testing.T, g Gomega) {
	ctx := context.Background()
	files, err := filepath.Glob("../../config/policy/*.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	var objs []*unstructured.Unstructured
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" || filepath.Base(f) == "kustomizeconfig.yaml" {
			continue
		}
		data, err := os.ReadFile(f)
		g.Expect(err).NotTo(HaveOccurred())
		for _, doc := range strings.Split(string(data), "\n---\n") {
			u := &unstructured.Unstructured{}
			g.Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed(), "%s", f)
			objs = append(objs, u)
		}
	}
	g.Expect(objs).To(HaveLen(10), "five policies and their bindings")
	for _, u := range objs {
		g.Expect(k8sClient.Create(ctx, u)).To(Succeed(), "%s %s", u.GetKind(), u.GetName())
	}
	t.Cleanup(func() {
		for _, u := range objs {
			_ = k8sClient.Delete(ctx, u)
		}
		NewWithT(t).Eventually(func(g Gomega) {
			probe := policyProbe("gone")
			g.Expect(k8sClient.Create(ctx, probe, client.DryRunAll)).To(Succeed())
			g.Expect(probe.Finalizers).To(BeEmpty(), "outcome-guard-at-create is still served")
			g.Expect(probe.Annotations).NotTo(HaveKey(paymentsv1alpha1.AnnotationResolvedBy), "resolve-attribution is still served")
		}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
	})

	// A finished job (Completed, finalizer off, label on) for the probe of
	// release-on-spec-change. Every mutating policy answers 503 until the API
	// server has read the CRD's schema (it polls every 5 seconds), so the job
	// is made inside the wait.
	var done *paymentsv1alpha1.PaymentJob
	finished := func(g Gomega) {
		pj := policyProbe("served")
		g.Expect(k8sClient.Create(ctx, pj)).To(Succeed())
		pj.Status.Phase = paymentsv1alpha1.PhaseCompleted
		g.Expect(k8sClient.Status().Update(ctx, pj)).To(Succeed())
		pj.Finalizers = nil
		pj.Labels = map[string]string{paymentsv1alpha1.LabelFinished: "true"}
		g.Expect(k8sClient.Update(ctx, pj)).To(Succeed())
		done = pj
	}

	// Dry runs pass through admission and store nothing.
	g.Eventually(func(g Gomega) {
		if done == nil {
			finished(g)
		}
		labelled := policyProbe("served")
		labelled.Labels = map[string]string{paymentsv1alpha1.LabelFinished: "true"}
		err := k8sClient.Create(ctx, labelled, client.DryRunAll)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "finished-label is not served yet: got %v", err)

		probe := policyProbe("served")
		g.Expect(k8sClient.Create(ctx, probe, client.DryRunAll)).To(Succeed())
		g.Expect(probe.Finalizers).To(ContainElement(paymentsv1alpha1.Finalizer), "outcome-guard-at-create is not served yet")
		g.Expect(probe.Annotations).To(HaveKey(paymentsv1alpha1.AnnotationResolvedBy), "resolve-attribution is not served yet")

		released := done.DeepCopy()
		released.Spec.Suspend = ptr.To(true)
		g.Expect(k8sClient.Update(ctx, released, client.DryRunAll)).To(Succeed())
		g.Expect(released.Labels).NotTo(HaveKey(paymentsv1alpha1.LabelFinished), "release-on-spec-change is not served yet")
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
}

// policyProbe is a valid PaymentJob that asks for a resolution, so that
// every mutating policy of config/policy has something to do at create.
func policyProbe(prefix string) *paymentsv1alpha1.PaymentJob {
	return &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{
			Name:        uniqueName("probe-" + prefix),
			Namespace:   namespace,
			Annotations: map[string]string{paymentsv1alpha1.AnnotationResolve: "not-charged"},
		},
		Spec: paymentsv1alpha1.PaymentJobSpec{
			ProviderRef: paymentsv1alpha1.ProviderReference{Name: "stripe"},
			Amount:      100,
			Currency:    "usd",
		},
	}
}

// TestFinishedLabelPolicies proves, on the API server, the two policies of
// config/policy about the finished label: the label that takes a job out of the operator's cache can
// only be set on a finished job (a job created with it would never be
// charged), and a spec change of a finished job takes it off again, so that
// the operator acknowledges the new generation.
func TestFinishedLabelPolicies(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	installPolicies(t, g)

	job := func(name string, labels map[string]string) *paymentsv1alpha1.PaymentJob {
		return &paymentsv1alpha1.PaymentJob{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
			Spec: paymentsv1alpha1.PaymentJobSpec{
				ProviderRef: paymentsv1alpha1.ProviderReference{Name: "stripe"},
				Amount:      700,
				Currency:    "usd",
			},
		}
	}
	finished := map[string]string{paymentsv1alpha1.LabelFinished: "true"}

	created := k8sClient.Create(ctx, job(uniqueName("labelled"), finished))
	g.Expect(apierrors.IsInvalid(created)).To(BeTrue(), "got %v", created)
	g.Expect(created.Error()).To(ContainSubstring("metadata.labels[payments.idempotency.dev/finished]"))
	g.Expect(created.Error()).To(ContainSubstring("a job created with it would never be charged"))
	err := k8sClient.Create(ctx, job(uniqueName("labelled"), map[string]string{paymentsv1alpha1.LabelFinished: "false"}))
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "any value of the label is refused: got %v", err)

	// Neither a Processing job, nor a Completed job that still has the
	// finalizer (it would leave the cache with it) can be labelled.
	pj := job(uniqueName("finishing"), nil)
	pj.Finalizers = []string{paymentsv1alpha1.Finalizer}
	g.Expect(k8sClient.Create(ctx, pj)).To(Succeed())
	for _, phase := range []paymentsv1alpha1.PaymentJobPhase{paymentsv1alpha1.PhaseProcessing, paymentsv1alpha1.PhaseCompleted} {
		pj.Status.Phase = phase
		g.Expect(k8sClient.Status().Update(ctx, pj)).To(Succeed())
		labelled := pj.DeepCopy()
		labelled.Labels = finished
		err = k8sClient.Update(ctx, labelled)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: got %v", phase, err)
		g.Expect(err.Error()).To(ContainSubstring("this job is not finished"))
	}

	// The operator's finish patch removes the finalizer and sets the label in
	// one write: accepted, for Completed and Failed jobs.
	patch := client.MergeFromWithOptions(pj.DeepCopy(), client.MergeFromWithOptimisticLock{})
	pj.Finalizers = nil
	pj.Labels = finished
	g.Expect(k8sClient.Patch(ctx, pj, patch)).To(Succeed())
	failed := job(uniqueName("declined"), nil)
	g.Expect(k8sClient.Create(ctx, failed)).To(Succeed())
	failed.Status.Phase = paymentsv1alpha1.PhaseFailed
	g.Expect(k8sClient.Status().Update(ctx, failed)).To(Succeed())
	failed.Finalizers = nil // added by outcome-guard-at-create
	failed.Labels = finished
	g.Expect(k8sClient.Update(ctx, failed)).To(Succeed())

	// Other metadata changes keep the label; a spec change takes it off in
	// the same update.
	pj.Annotations = map[string]string{"team": "billing"}
	g.Expect(k8sClient.Update(ctx, pj)).To(Succeed())
	g.Expect(pj.Labels).To(HaveKeyWithValue(paymentsv1alpha1.LabelFinished, "true"))
	pj.Spec.Suspend = ptr.To(true)
	g.Expect(k8sClient.Update(ctx, pj)).To(Succeed())
	g.Expect(pj.Labels).NotTo(HaveKey(paymentsv1alpha1.LabelFinished), "generation %d", pj.Generation)
}
