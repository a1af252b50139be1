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
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// The world's days that take objects away: the TTL collector, an etcd
// restore to an earlier snapshot.

// ttlExpiry moves the clock a minute (a job's TTL, createJob) and runs one
// sweep of a manager's TTL collector (ttl.FinishedJobCollector.SweepOnce,
// as its ticker does): finished jobs
// whose spec.ttlSecondsAfterFinished has passed are deleted once the
// ledger holds their outcome; Git re-creates them (gitopsSync), and they
// must be finished from the ledger, never charged again.
func (c *campaign) ttlExpiry(t *rapid.T) {
	i := rapid.IntRange(0, len(c.w.managers)-1).Draw(t, "manager")
	c.w.clock.Step(time.Minute)
	before, err := c.w.objects(context.Background())
	if err != nil {
		t.Fatalf("%v", err)
	}
	err = c.w.managers[i].collector.SweepOnce(context.Background())
	after, lerr := c.w.objects(context.Background())
	if lerr != nil {
		t.Fatalf("%v", lerr)
	}
	t.Logf("manager %d's TTL collector sweeps a minute later: %d objects before, %d after: %v", i, len(before), len(after), err)
}

// ptrString is *p as text, or "nil".
func ptrString[T any](p *T) string {
	if p == nil {
		return "nil"
	}
	return fmt.Sprint(*p)
}

// The etcd restore. A snapshot copies what etcd holds of the world: the
// jobs, the refunds, the ledger's pages, the PaymentProviders and their
// Secrets. The provider (the sandbox) keeps everything it had.

// etcdObjects are copies of what etcd holds: jobs, refunds, the ledger's
// pages, PaymentProviders and Secrets.
func (w *world) etcdObjects() ([]client.Object, error) {
	var (
		jobs    paymentsv1alpha1.PaymentJobList
		refs    paymentsv1alpha1.PaymentRefundList
		pages   paymentsv1alpha1.PaymentLedgerList
		pps     paymentsv1alpha1.PaymentProviderList
		secrets corev1.SecretList
	)
	for _, l := range []client.ObjectList{&jobs, &refs, &pages, &pps, &secrets} {
		if err := w.store.List(context.Background(), l); err != nil {
			return nil, fmt.Errorf("cannot list %T: %w", l, err)
		}
	}
	objs := make([]client.Object, 0, len(jobs.Items)+len(refs.Items)+len(pages.Items)+len(pps.Items)+len(secrets.Items))
	for i := range jobs.Items {
		objs = append(objs, &jobs.Items[i])
	}
	for i := range refs.Items {
		objs = append(objs, &refs.Items[i])
	}
	for i := range pages.Items {
		objs = append(objs, &pages.Items[i])
	}
	for i := range pps.Items {
		objs = append(objs, &pps.Items[i])
	}
	for i := range secrets.Items {
		objs = append(objs, &secrets.Items[i])
	}
	return objs, nil
}

// etcdSnapshot takes a snapshot of etcd, which etcdRestore puts back.
func (c *campaign) etcdSnapshot(t *rapid.T) {
	objs, err := c.w.etcdObjects()
	if err != nil {
		t.Fatalf("%v", err)
	}
	c.snapshot, c.snapTerminating = objs, maps.Clone(c.terminating)
	t.Logf("etcd is snapshotted: %d objects (payments, ledger pages, providers, Secrets)", len(objs))
}

// etcdRestore restores the last snapshot: every object that is not in it
// is gone (a restore has no finalizer to wait for), every one in it is
// back as it was, under its UID, with its status; then every manager
// exits and is restarted, as each does when it notices a restore
// (docs/reliability.md, "An etcd restore restarts the managers"). The
// provider keeps everything.
func (c *campaign) etcdRestore(t *rapid.T) {
	if c.snapshot == nil {
		t.Skip("no snapshot to restore")
	}
	now, err := c.w.etcdObjects()
	if err != nil {
		t.Fatalf("%v", err)
	}
	for _, obj := range now {
		c.w.wipe(t, obj)
	}
	for _, obj := range c.snapshot {
		c.w.putBack(t, obj.DeepCopyObject().(client.Object))
		// A restore is the one thing that takes an outcome back
		// (oracle_final_test.go): the object's outcome is the
		// snapshot's, and final again once it finishes.
		delete(c.outcomes, obj.GetUID())
	}
	// The namespaces Terminating then are Terminating again.
	c.terminating = maps.Clone(c.snapTerminating)
	b, err := c.w.read(context.Background())
	if err != nil {
		t.Fatalf("cannot read the books: %v", err)
	}
	c.noteRestored(b)
	for i := range c.w.managers {
		if err := c.w.crash(i); err != nil {
			t.Fatalf("cannot restart manager %d: %v", i, err)
		}
	}
	c.tally.restores++
	t.Logf("etcd is restored from its snapshot: %d objects before, %d back; every manager restarts", len(now), len(c.snapshot))
}

// wipe removes obj from the API server at once, its finalizers stripped.
func (w *world) wipe(t *rapid.T, obj client.Object) {
	ctx := context.Background()
	if len(obj.GetFinalizers()) > 0 {
		obj.SetFinalizers(nil)
		if err := w.store.Update(ctx, obj); err != nil && !isNotFound(err) {
			t.Fatalf("cannot strip the finalizers of %T %s: %v", obj, obj.GetName(), err)
		}
	}
	if err := w.store.Delete(ctx, obj); err != nil && !isNotFound(err) {
		t.Fatalf("cannot delete %T %s: %v", obj, obj.GetName(), err)
	}
}

// putBack creates obj as the snapshot holds it: its UID, spec, status,
// finalizers, and its deletion if it was being deleted.
func (w *world) putBack(t *rapid.T, obj client.Object) {
	ctx := context.Background()
	deleting := obj.GetDeletionTimestamp() != nil
	obj.SetDeletionTimestamp(nil)
	obj.SetResourceVersion("")
	if err := w.create(obj); err != nil {
		t.Fatalf("cannot restore: %v", err)
	}
	if deleting {
		if err := w.store.Delete(ctx, obj); err != nil {
			t.Fatalf("cannot restore the deletion of %T %s: %v", obj, obj.GetName(), err)
		}
	}
}

// noteRestored tells the model what the restore took out of the books:
// the keys the provider forgot whose outcome no book holds now are
// forgotten (a job Git re-applies is charged again, as one re-created
// after the provider forgot its key: docs/reliability.md); the keys
// charged or refunded at the provider that no book holds now are
// restored away (the reconciliation reports them until their objects
// finish again).
func (c *campaign) noteRestored(b books) {
	c.noteForgotten(b)
	held := map[string]bool{}
	for _, e := range b.ledger {
		held[e.Key] = true
	}
	for i := range b.jobs {
		if finished(b.jobs[i].Status.Phase) {
			held[b.jobs[i].Status.IdempotencyKey] = true
		}
	}
	for i := range b.refs {
		if finished(b.refs[i].Status.Phase) {
			held[b.refs[i].Status.IdempotencyKey] = true
		}
	}
	if c.m.restoredAway == nil {
		c.m.restoredAway = map[string]bool{}
	}
	// What was done behind the operator's back was never in its books,
	// and the reconciliation must still report it, restore or not.
	for _, in := range b.intents {
		if !held[in.IdempotencyKey] && c.m.behind.outside[in.ID] == "" {
			c.m.restoredAway[in.IdempotencyKey] = true
		}
	}
	if c.m.restoredRefunds == nil {
		c.m.restoredRefunds = map[string]bool{}
	}
	for _, r := range b.refunds {
		if !held[r.IdempotencyKey] && payment.IsRefundKey(r.IdempotencyKey) {
			c.m.restoredAway[r.IdempotencyKey] = true
			c.m.restoredRefunds[r.ID] = true
		}
	}
}
