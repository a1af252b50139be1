//go:build e2e

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

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// controllerManagerTimeout bounds the waits on kube-controller-manager's
// namespace and garbage collector controllers.
const controllerManagerTimeout = time.Minute

// TestNamespaceDeletion deletes a namespace that holds core objects and a
// PaymentProvider: kube-controller-manager's namespace controller must empty
// it, custom resources included, and remove it, as in a real cluster.
func TestNamespaceDeletion(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	k8s := suite.k8s
	ns := createGeneratedNamespace(t, "e2e-namespace-deletion-")
	objects := []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns}, Data: map[string]string{"a": "b"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "credentials", Namespace: ns}, StringData: map[string]string{"apiKey": "sk_test_unused"}},
		&paymentsv1alpha1.PaymentProvider{
			ObjectMeta: metav1.ObjectMeta{Name: "stripe", Namespace: ns},
			Spec: paymentsv1alpha1.PaymentProviderSpec{Stripe: &paymentsv1alpha1.StripeProvider{
				APIBase:      "http://127.0.0.1:1",
				SecretKeyRef: paymentsv1alpha1.SecretKeyReference{Name: "credentials", Key: "apiKey"},
			}},
		},
	}
	for _, obj := range objects {
		g.Expect(k8s.Create(ctx, obj)).To(Succeed())
	}

	start := time.Now()
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
	g.Expect(k8s.Delete(ctx, namespace)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(namespace), namespace))
	}, controllerManagerTimeout, 100*time.Millisecond).Should(BeTrue(), func() string {
		return fmt.Sprintf("namespace %s was not deleted: phase %s, conditions %+v",
			ns, namespace.Status.Phase, namespace.Status.Conditions)
	})
	t.Logf("namespace %s with %d objects deleted in %s", ns, len(objects), time.Since(start).Round(time.Millisecond))
}

// TestGarbageCollection deletes a ConfigMap that owns another ConfigMap and
// a PaymentProvider, with each propagation policy: kube-controller-manager's
// garbage collector must delete the dependents (background, foreground) or
// release them (orphan), as in a real cluster.
func TestGarbageCollection(t *testing.T) {
	ns := createGeneratedNamespace(t, "e2e-garbage-collection-")
	tests := []struct {
		name   string
		policy metav1.DeletionPropagation
		// orphaned is true when the dependents must stay, without the
		// owner reference.
		orphaned bool
	}{
		{name: "background", policy: metav1.DeletePropagationBackground},
		{name: "foreground", policy: metav1.DeletePropagationForeground},
		{name: "orphan", policy: metav1.DeletePropagationOrphan, orphaned: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			k8s := suite.k8s
			owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: tt.name + "-owner", Namespace: ns}}
			g.Expect(k8s.Create(ctx, owner)).To(Succeed())
			ref := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}
			dependents := []client.Object{
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
					Name: tt.name + "-dependent", Namespace: ns, OwnerReferences: []metav1.OwnerReference{ref},
				}},
				&paymentsv1alpha1.PaymentProvider{
					ObjectMeta: metav1.ObjectMeta{
						Name: tt.name + "-dependent", Namespace: ns, OwnerReferences: []metav1.OwnerReference{ref},
					},
					Spec: paymentsv1alpha1.PaymentProviderSpec{Stripe: &paymentsv1alpha1.StripeProvider{
						APIBase:      "http://127.0.0.1:1",
						SecretKeyRef: paymentsv1alpha1.SecretKeyReference{Name: "credentials", Key: "apiKey"},
					}},
				},
			}
			for _, obj := range dependents {
				g.Expect(k8s.Create(ctx, obj)).To(Succeed())
			}

			start := time.Now()
			g.Expect(k8s.Delete(ctx, owner, client.PropagationPolicy(tt.policy))).To(Succeed())
			// Foreground and orphan deletion leave the owner to the
			// garbage collector, which removes their finalizer.
			g.Eventually(func() bool {
				return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(owner), owner))
			}, controllerManagerTimeout, 100*time.Millisecond).Should(BeTrue(), func() string {
				return fmt.Sprintf("owner %s was not deleted: finalizers %v", owner.Name, owner.Finalizers)
			})
			for _, obj := range dependents {
				key := client.ObjectKeyFromObject(obj)
				if tt.orphaned {
					g.Eventually(func(g Gomega) {
						g.Expect(k8s.Get(ctx, key, obj)).To(Succeed())
						g.Expect(obj.GetOwnerReferences()).To(BeEmpty())
					}, controllerManagerTimeout, 100*time.Millisecond).Should(Succeed(), "%T %s was not orphaned", obj, key)
					continue
				}
				g.Eventually(func() bool {
					return apierrors.IsNotFound(k8s.Get(ctx, key, obj))
				}, controllerManagerTimeout, 100*time.Millisecond).Should(BeTrue(), "%T %s was not garbage collected", obj, key)
			}
			t.Logf("%s deletion: owner and %d dependents settled in %s", tt.policy, len(dependents), time.Since(start).Round(time.Millisecond))
		})
	}
}

// createGeneratedNamespace creates a namespace named prefix plus a random suffix and
// deletes it when the test ends, without waiting.
func createGeneratedNamespace(t *testing.T, prefix string) string {
	t.Helper()
	g := NewWithT(t)
	namespace := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	g.Expect(suite.k8s.Create(context.Background(), namespace)).To(Succeed())
	t.Cleanup(func() {
		if err := suite.k8s.Delete(context.Background(), namespace); client.IgnoreNotFound(err) != nil {
			t.Errorf("cannot delete namespace %s: %v", namespace.Name, err)
		}
	})
	return namespace.Name
}
