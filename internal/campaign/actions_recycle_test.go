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

package campaign

import (
	"context"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// A namespace recycled under the same name: deleted with everything in it,
// and created again from Git, its PaymentProvider a new object (a new
// UID) with new Secrets. As a real namespace deletion goes: its jobs and
// refunds get a deletionTimestamp, the operator's finalizers run (the
// managers' passes, as the history draws them: an unclaimed object goes
// at once, one in flight once its outcome is known), and the namespace
// is gone once they are; until then it is Terminating, and the API server
// refuses what Git or a user applies in it. Then Git applies its
// manifests again (gitopsSync, or quiesce's re-sync): every job whose
// payment the ledger holds is finished from it (FoundInLedger: the ledger
// is cluster-scoped and keyed by <namespace>/<key>,
// docs/reliability.md), or stalls ProviderChanged where the ledger's
// record was made at another account than the new PaymentProvider
// reaches; nothing is charged or refunded twice (the oracle's
// at-most-one rules, which a recycle does not relax).

// recycleNamespace deletes one of the namespaces: every job and refund in
// it is deleted, and the namespace is Terminating until they are gone
// (settleNamespaces).
func (c *campaign) recycleNamespace(t *rapid.T) {
	ns := rapid.SampledFrom(namespaces).Draw(t, "namespace")
	if c.terminating[ns] {
		t.Skipf("namespace %s is already terminating", ns)
	}
	ctx := context.Background()
	var (
		jobs paymentsv1alpha1.PaymentJobList
		refs paymentsv1alpha1.PaymentRefundList
	)
	for _, l := range []client.ObjectList{&jobs, &refs} {
		if err := c.w.store.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatalf("cannot list %T in %s: %v", l, ns, err)
		}
	}
	objs := make([]client.Object, 0, len(jobs.Items)+len(refs.Items))
	for i := range jobs.Items {
		objs = append(objs, &jobs.Items[i])
	}
	for i := range refs.Items {
		objs = append(objs, &refs.Items[i])
	}
	for _, obj := range objs {
		if err := c.w.store.Delete(ctx, obj); err != nil && !isNotFound(err) {
			t.Fatalf("cannot delete %T %s/%s: %v", obj, ns, obj.GetName(), err)
		}
	}
	if c.terminating == nil {
		c.terminating = map[string]bool{}
	}
	c.terminating[ns] = true
	t.Logf("a person deletes namespace %s: its %d jobs and %d refunds are deleted, and it is Terminating until they are gone",
		ns, len(jobs.Items), len(refs.Items))
	c.settleNamespaces(t)
}

// settleNamespaces finishes the deletion of every Terminating namespace
// whose jobs and refunds are gone (the namespace controller's part), and
// creates it again from Git: a new PaymentProvider (new UID, the same key
// scope, Git's spec: credentials in secretName) and its Secrets with new
// keys of their accounts. Git applies the jobs and refunds later.
func (c *campaign) settleNamespaces(t *rapid.T) {
	for _, ns := range namespaces {
		if !c.terminating[ns] {
			continue
		}
		left, err := c.w.paymentsIn(ns)
		if err != nil {
			t.Fatalf("%v", err)
		}
		if left > 0 {
			continue
		}
		c.m.keys++
		uid, err := c.w.recreateTenant(ns, c.m.keys+1)
		if err != nil {
			t.Fatalf("%v", err)
		}
		delete(c.terminating, ns)
		if c.recycled == nil {
			c.recycled = map[string]bool{}
		}
		c.recycled[ns] = true
		c.tally.recycles++
		t.Logf("namespace %s is gone and created again: PaymentProvider %s/%s with uid %s, new Secrets; Git applies its manifests",
			ns, ns, providerName, uid)
	}
}

// paymentsIn counts the jobs and refunds in namespace ns.
func (w *world) paymentsIn(ns string) (int, error) {
	var (
		jobs paymentsv1alpha1.PaymentJobList
		refs paymentsv1alpha1.PaymentRefundList
	)
	for _, l := range []client.ObjectList{&jobs, &refs} {
		if err := w.store.List(context.Background(), l, client.InNamespace(ns)); err != nil {
			return 0, fmt.Errorf("cannot list %T in %s: %w", l, ns, err)
		}
	}
	return len(jobs.Items) + len(refs.Items), nil
}

// recreateTenant deletes namespace ns's PaymentProvider (every manager's
// PaymentProvider reconciler retires its cache entry) and Secrets, and
// creates them again as Git holds them: the provider under a new UID, the
// Secrets with the n-th key of their accounts.
func (w *world) recreateTenant(ns string, n int) (string, error) {
	ctx := context.Background()
	pp := &paymentsv1alpha1.PaymentProvider{}
	if err := w.store.Get(ctx, objectKey(ns, providerName), pp); err == nil {
		pp.Finalizers = nil
		if err := w.store.Update(ctx, pp); err != nil {
			return "", fmt.Errorf("cannot release PaymentProvider %s/%s: %w", ns, providerName, err)
		}
		if err := w.store.Delete(ctx, pp); err != nil && !isNotFound(err) {
			return "", fmt.Errorf("cannot delete PaymentProvider %s/%s: %w", ns, providerName, err)
		}
	} else if !isNotFound(err) {
		return "", fmt.Errorf("cannot read PaymentProvider %s/%s: %w", ns, providerName, err)
	}
	for _, m := range w.managers {
		m.providers.Retire(objectKey(ns, providerName))
	}
	secrets := []*corev1.Secret{newSecret(ns, secretName, credential(account, n)), newSecret(ns, otherSecretName, credential(otherAccount, n))}
	for _, s := range secrets {
		if err := w.store.Delete(ctx, s.DeepCopy()); err != nil && !isNotFound(err) {
			return "", fmt.Errorf("cannot delete Secret %s/%s: %w", ns, s.Name, err)
		}
		if err := w.store.Create(ctx, s); err != nil {
			return "", fmt.Errorf("cannot create Secret %s/%s: %w", ns, s.Name, err)
		}
	}
	uid := w.uid()
	if err := w.create(newProvider(ns, uid, w.scopes[ns])); err != nil {
		return "", err
	}
	return string(uid), nil
}

// create creates obj with its status (the status subresource: a create
// does not set it).
func (w *world) create(obj client.Object) error {
	ctx := context.Background()
	want := obj.DeepCopyObject().(client.Object)
	if err := w.store.Create(ctx, obj); err != nil {
		return fmt.Errorf("cannot create %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
	}
	status := reflect.ValueOf(obj).Elem().FieldByName("Status")
	if !status.IsValid() {
		return nil
	}
	status.Set(reflect.ValueOf(want).Elem().FieldByName("Status"))
	if err := w.store.Status().Update(ctx, obj); err != nil {
		return fmt.Errorf("cannot write the status of %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// refused reports whether the API server refuses obj: its namespace is
// Terminating. Git applies it again once the namespace is back.
func (c *campaign) refused(t *rapid.T, obj client.Object) bool {
	if !c.terminating[obj.GetNamespace()] {
		return false
	}
	t.Logf("the API server refuses %T %s/%s: namespace %s is terminating", obj, obj.GetNamespace(), obj.GetName(), obj.GetNamespace())
	return true
}

// What the product promises of a recycled namespace (docs/reliability.md,
// "a tenant's jobs, PaymentProvider, Secret and namespace deleted ...
// everything re-synced"): a job or refund Git applies again in it, whose
// outcome the ledger holds under its key when it is applied, is finished
// from the ledger with no request of its own (FoundInLedger), or stalls
// where the ledger's record cannot be its outcome: made at another
// account than the new PaymentProvider reaches (ProviderChanged), or for
// another request under the key (ChargeMismatch).

// noteReapplied notes obj, just applied in a namespace recycled earlier in
// the history, when the ledger holds an outcome under the key it sends.
func (c *campaign) noteReapplied(t *rapid.T, obj client.Object) {
	if !c.recycled[obj.GetNamespace()] {
		return
	}
	var key string
	switch o := obj.(type) {
	case *paymentsv1alpha1.PaymentJob:
		key = c.m.jobOf(o.Namespace, o.Name).sentKey()
	default:
		return
	}
	b, err := c.w.read(context.Background())
	if err != nil {
		t.Fatalf("cannot read the books: %v", err)
	}
	for _, e := range b.ledger {
		if e.Key == key {
			if c.reapplied == nil {
				c.reapplied = map[types.UID]string{}
			}
			c.reapplied[obj.GetUID()] = key
			return
		}
	}
}

// recycledViolations: every job noted by noteReapplied that is still there
// at the end of the history is finished FoundInLedger, or stalled
// ProviderChanged or ChargeMismatch.
func (c *campaign) recycledViolations(b books) []string {
	var v []string
	for i := range b.jobs {
		j := &b.jobs[i]
		key, ok := c.reapplied[j.UID]
		if !ok {
			continue
		}
		reason := readyReason(j.Status.Conditions)
		if c.tally.outcomes == nil {
			c.tally.outcomes = map[string]int{}
		}
		c.tally.outcomes["recycled job applied again, its key in the ledger"]++
		switch {
		case finished(j.Status.Phase) && reason == paymentsv1alpha1.ReasonFoundInLedger:
		case isStalled(j.Status.Conditions) && (reason == paymentsv1alpha1.ReasonProviderChanged || reason == paymentsv1alpha1.ReasonChargeMismatch):
		default:
			v = append(v, fmt.Sprintf("recycled-found-in-ledger: PaymentJob %s/%s, applied again in its recycled namespace while the ledger held %s, is %s (%s)",
				j.Namespace, j.Name, key, j.Status.Phase, reason))
		}
	}
	return v
}
