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
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// TestFinishedLabelPolicy installs config/policy, as config/default does, and
// proves that the label that takes a job out of the operator's cache can only
// be set on a finished job: a job created with it would never be charged.
func TestFinishedLabelPolicy(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	data, err := os.ReadFile("../../config/policy/finished_label.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	docs := strings.Split(string(data), "\n---\n")
	g.Expect(docs).To(HaveLen(2))
	var policy admissionregistrationv1.ValidatingAdmissionPolicy
	var binding admissionregistrationv1.ValidatingAdmissionPolicyBinding
	g.Expect(yaml.UnmarshalStrict([]byte(docs[0]), &policy)).To(Succeed())
	g.Expect(yaml.UnmarshalStrict([]byte(docs[1]), &binding)).To(Succeed())
	g.Expect(k8sClient.Create(ctx, &policy)).To(Succeed())
	g.Expect(k8sClient.Create(ctx, &binding)).To(Succeed())
	t.Cleanup(func() {
		_ = k8sClient.Delete(ctx, &binding)
		_ = k8sClient.Delete(ctx, &policy)
	})

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

	// A job that is still Processing cannot be labelled.
	pj := job(uniqueName("finishing"), nil)
	g.Expect(k8sClient.Create(ctx, pj)).To(Succeed())
	pj.Status.Phase = paymentsv1alpha1.PhaseProcessing
	g.Expect(k8sClient.Status().Update(ctx, pj)).To(Succeed())
	labelled := pj.DeepCopy()
	labelled.Labels = finished
	err = k8sClient.Update(ctx, labelled)
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("this job is not finished"))

	// Once Completed, the operator's finish patch goes through; the label
	// can be taken away and set again.
	pj.Status.Phase = paymentsv1alpha1.PhaseCompleted
	g.Expect(k8sClient.Status().Update(ctx, pj)).To(Succeed())
	patch := client.MergeFrom(pj.DeepCopy())
	pj.Labels = finished
	g.Expect(k8sClient.Patch(ctx, pj, patch)).To(Succeed())
	pj.Labels = nil
	g.Expect(k8sClient.Update(ctx, pj)).To(Succeed())
	pj.Labels = finished
	g.Expect(k8sClient.Update(ctx, pj)).To(Succeed())
}
