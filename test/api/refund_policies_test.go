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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// The admission policies of config/policy hold a PaymentRefund as they hold
// a PaymentJob: the outcome guard at create, resolved-by that names who
// resolved it, and no finished label on a refund that is not finished.
func TestAdmissionPoliciesHoldRefunds(t *testing.T) {
	g := NewWithT(t)
	installPolicies(t, g)
	ctx := context.Background()

	refund := createRefund(g, validRefund(uniqueName("guarded-refund")))
	g.Expect(refund.Finalizers).To(ConsistOf(paymentsv1alpha1.Finalizer), "the outcome guard is added at create")

	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: "alice", Groups: []string{"system:masters"}}
	alice, err := client.New(cfg, client.Options{Scheme: k8sClient.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	obj := validRefund(uniqueName("resolved-refund"))
	obj["metadata"].(map[string]any)["annotations"] = map[string]any{
		paymentsv1alpha1.AnnotationResolve:    "not-charged",
		paymentsv1alpha1.AnnotationResolvedBy: "mallory",
	}
	u := &unstructured.Unstructured{Object: obj}
	g.Expect(alice.Create(ctx, u)).To(Succeed())
	g.Expect(u.GetAnnotations()).To(HaveKeyWithValue(paymentsv1alpha1.AnnotationResolvedBy, "alice"),
		"a resolve is attributed to who wrote it, whatever the manifest says")

	labelled := validRefund(uniqueName("labelled-refund"))
	labelled["metadata"].(map[string]any)["labels"] = map[string]any{paymentsv1alpha1.LabelFinished: "true"}
	err = k8sClient.Create(ctx, &unstructured.Unstructured{Object: labelled})
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("metadata.labels[payments.idempotency.dev/finished]"))
}
