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
// does, and removes them when the test ends.
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
	g.Expect(objs).To(HaveLen(4), "two policies and their bindings")
	for _, u := range objs {
		g.Expect(k8sClient.Create(ctx, u)).To(Succeed(), "%s %s", u.GetKind(), u.GetName())
	}
	t.Cleanup(func() {
		for _, u := range objs {
			_ = k8sClient.Delete(ctx, u)
		}
	})
}

// TestFinishedLabelPolicies proves, on the API server, the two policies of
// config/policy: the label that takes a job out of the operator's cache can
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

	// The API server serves a new policy within seconds; until then the
	// create goes through (each attempt uses a new name).
	var created error
	g.Eventually(func() error {
		created = k8sClient.Create(ctx, job(uniqueName("labelled"), finished))
		return created
	}, 30*time.Second, 200*time.Millisecond).Should(HaveOccurred())
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
	failed.Labels = finished
	g.Expect(k8sClient.Update(ctx, failed)).To(Succeed())

	// Other metadata changes keep the label; a spec change takes it off in
	// the same update, once the mutating policy is served.
	pj.Annotations = map[string]string{"team": "billing"}
	g.Expect(k8sClient.Update(ctx, pj)).To(Succeed())
	g.Expect(pj.Labels).To(HaveKeyWithValue(paymentsv1alpha1.LabelFinished, "true"))
	g.Eventually(func(g Gomega) {
		current := &paymentsv1alpha1.PaymentJob{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pj), current)).To(Succeed())
		if _, ok := current.Labels[paymentsv1alpha1.LabelFinished]; !ok {
			return
		}
		current.Spec.Suspend = ptr.To(current.Spec.Suspend == nil || !*current.Spec.Suspend)
		g.Expect(k8sClient.Update(ctx, current)).To(Succeed())
		g.Expect(current.Labels).NotTo(HaveKey(paymentsv1alpha1.LabelFinished), "generation %d", current.Generation)
	}, 30*time.Second, 200*time.Millisecond).Should(Succeed())
}
