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
	"time"

	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// The world's days that take objects away: the TTL collector, a namespace
// recycled, an etcd restore.

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

// paymentObjects are the payment objects etcd holds: jobs, refunds and
// the ledger's pages, as copies.
func (w *world) paymentObjects() ([]client.Object, error) {
	var (
		jobs  paymentsv1alpha1.PaymentJobList
		refs  paymentsv1alpha1.PaymentRefundList
		pages paymentsv1alpha1.PaymentLedgerList
	)
	for _, l := range []client.ObjectList{&jobs, &refs, &pages} {
		if err := w.store.List(context.Background(), l); err != nil {
			return nil, fmt.Errorf("cannot list %T: %w", l, err)
		}
	}
	objs := make([]client.Object, 0, len(jobs.Items)+len(refs.Items)+len(pages.Items))
	for i := range jobs.Items {
		objs = append(objs, &jobs.Items[i])
	}
	for i := range refs.Items {
		objs = append(objs, &refs.Items[i])
	}
	for i := range pages.Items {
		objs = append(objs, &pages.Items[i])
	}
	return objs, nil
}

// etcdSnapshot takes a snapshot of etcd's payment objects and ledger
// pages, which etcdRestore puts back.
func (c *campaign) etcdSnapshot(t *rapid.T) {
	objs, err := c.w.paymentObjects()
	if err != nil {
		t.Fatalf("%v", err)
	}
	c.snapshot = objs
	t.Logf("etcd is snapshotted: %d payment objects and ledger pages", len(objs))
}

// etcdRestore restores the last snapshot: every payment object and ledger
// page that is not in it is gone (a restore has no finalizer to wait for),
// every one in it is back as it was, under its UID; then every manager
// exits and is restarted, as each does when it notices a restore
// (docs/reliability.md, "An etcd restore restarts the managers"). The
// provider keeps everything. The outcomes the restore took back are
// forgotten by the oracle's outcome-final rule: a restore is the one
// thing that may take an outcome back.
func (c *campaign) etcdRestore(t *rapid.T) {
	if c.snapshot == nil {
		t.Skip("no snapshot to restore")
	}
	now, err := c.w.paymentObjects()
	if err != nil {
		t.Fatalf("%v", err)
	}
	for _, obj := range now {
		c.w.wipe(t, obj)
	}
	for _, obj := range c.snapshot {
		c.w.putBack(t, obj.DeepCopyObject().(client.Object))
		delete(c.outcomes, obj.GetUID())
	}
	// The keys the provider forgot whose outcome the restore took out of
	// the books are charged again when Git re-applies their jobs: a
	// restore leaves them to the lookup before a first charge
	// (docs/reliability.md, a Completed job re-created after the provider
	// forgot its key), which the campaign's providers do not make.
	b, err := c.w.read(context.Background())
	if err != nil {
		t.Fatalf("cannot read the books: %v", err)
	}
	c.noteForgotten(b)
	c.noteRestoredAway(b)
	for i := range c.w.managers {
		if err := c.w.crash(i); err != nil {
			t.Fatalf("cannot restart manager %d: %v", i, err)
		}
	}
	t.Logf("etcd is restored from its snapshot: %d payment objects and pages now, %d back; every manager restarts", len(now), len(c.snapshot))
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
	want := obj.DeepCopyObject().(client.Object)
	if err := w.store.Create(ctx, obj); err != nil {
		t.Fatalf("cannot restore %T %s: %v", obj, obj.GetName(), err)
	}
	if _, ok := want.(interface {
		GetPaymentStatus() *paymentsv1alpha1.PaymentStatus
	}); ok {
		// The status subresource: a create does not set it.
		reflect.ValueOf(obj).Elem().FieldByName("Status").Set(reflect.ValueOf(want).Elem().FieldByName("Status"))
		if err := w.store.Status().Update(ctx, obj); err != nil {
			t.Fatalf("cannot restore the status of %T %s: %v", obj, obj.GetName(), err)
		}
	}
	if deleting {
		if err := w.store.Delete(ctx, obj); err != nil {
			t.Fatalf("cannot restore the deletion of %T %s: %v", obj, obj.GetName(), err)
		}
	}
}

// noteRestoredAway notes the keys charged or refunded at the provider whose
// outcome no book holds after a restore: no ledger entry, no finished object.
func (c *campaign) noteRestoredAway(b books) {
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
	for _, in := range b.intents {
		if !held[in.IdempotencyKey] {
			c.m.restoredAway[in.IdempotencyKey] = true
		}
	}
	for _, r := range b.refunds {
		if !held[r.IdempotencyKey] {
			c.m.restoredAway[r.IdempotencyKey] = true
		}
	}
}
