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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// What users do: apply manifests (jobs, refunds), prune and re-sync them
// as Git does, approve a suspended job, resolve a stuck one.

// createJob applies a new PaymentJob: one of two namespaces, a key drawn
// from a small set (so that names collide on keys) or the name itself, an
// amount from a small set (so that colliding keys ask for the same request
// as often as for another).
func (c *campaign) createJob(t *rapid.T) {
	// One job in four waits for approval (DrawJob, which the process
	// campaign draws with too).
	j := DrawJob(t, namespaces, fmt.Sprintf("job-%d", len(c.m.jobs))).internal()
	j.scope = c.w.scopes[j.ns]
	// One job in three is deleted 60 s after it finished (the TTL
	// collector, ttlExpiry); drawn after DrawJob, whose draws the process
	// campaign shares.
	if rapid.IntRange(0, 2).Draw(t, "ttl") == 0 {
		j.ttl = ptr.To[int32](60)
	}
	c.m.jobs = append(c.m.jobs, j)
	t.Logf("create job %s/%s key=%q amount=%d suspend=%v ttl=%v (sends %s)", j.ns, j.name, j.key, j.amount, j.suspend, ptrString(j.ttl), j.sentKey())
	c.apply(t, j.object())
}

// apply creates obj as a user would, with a fresh UID and the clock's
// creation time.
func (c *campaign) apply(t *rapid.T, obj client.Object) {
	t.Helper()
	if c.refused(t, obj) {
		return
	}
	obj.SetUID(c.w.uid())
	obj.SetCreationTimestamp(metav1.NewTime(c.w.clock.Now()))
	if err := c.w.store.Create(context.Background(), obj); err != nil {
		t.Fatalf("cannot apply %T: %v", obj, err)
	}
	c.noteReapplied(t, obj)
}

// createRefund applies a PaymentRefund of a job applied earlier: part of
// its charge, all of it, or more than what is left once another refund
// took some.
func (c *campaign) createRefund(t *rapid.T) {
	if len(c.m.jobs) == 0 {
		t.Skip("no job to refund")
	}
	j := rapid.SampledFrom(c.m.jobs).Draw(t, "job")
	amount, _ := DrawRefundAmount(t, j.amount)
	c.refund(t, j, amount)
}

// raceRefunds applies two refunds of one job that each take more than
// half of it: they race for the last of the charge, and one must lose.
func (c *campaign) raceRefunds(t *rapid.T) {
	if len(c.m.jobs) == 0 {
		t.Skip("no job to refund")
	}
	j := rapid.SampledFrom(c.m.jobs).Draw(t, "job")
	c.refund(t, j, ptr.To(j.amount/2+1))
	c.refund(t, j, ptr.To(j.amount/2+1))
}

// refund applies a refund of amount (nil: the whole charge) of job j.
func (c *campaign) refund(t *rapid.T, j jobManifest, amount *int64) {
	r := refundManifest{ns: j.ns, name: fmt.Sprintf("refund-%d", len(c.m.refunds)), job: j.name, amount: amount}
	c.m.refunds = append(c.m.refunds, r)
	if amount == nil {
		t.Logf("create refund %s/%s of %s, the whole charge", r.ns, r.name, j.name)
	} else {
		t.Logf("create refund %s/%s of %s, amount %d", r.ns, r.name, j.name, *amount)
	}
	c.apply(t, r.object())
}

// gitopsPrune deletes a job, as a GitOps tool prunes it or a person
// deletes it; its manifest stays in Git.
func (c *campaign) gitopsPrune(t *rapid.T) {
	r := c.pick(t, kindJob)
	t.Logf("delete %s (prune)", r)
	obj := c.m.jobOf(r.key.Namespace, r.key.Name).object()
	if err := c.w.store.Delete(context.Background(), obj); err != nil && !isNotFound(err) {
		t.Fatalf("cannot delete %s: %v", r, err)
	}
}

// gitopsSync re-creates every job whose manifest is in Git and whose
// object is gone, from the same manifest.
func (c *campaign) gitopsSync(t *rapid.T) {
	synced := c.resync(t)
	if len(synced) == 0 {
		t.Skip("nothing to re-create")
	}
	t.Logf("gitops sync re-creates %v", synced)
}

// resync re-creates the jobs whose object is gone, then the refunds (an
// etcd restore or a recycled namespace takes them too), and names them.
func (c *campaign) resync(t *rapid.T) []string {
	var synced []string
	for _, j := range c.m.jobs {
		if c.terminating[j.ns] {
			continue
		}
		err := c.w.store.Get(context.Background(), objectKey(j.ns, j.name), j.object())
		if !isNotFound(err) {
			continue
		}
		synced = append(synced, j.ns+"/"+j.name)
		c.apply(t, j.object())
	}
	for _, r := range c.m.refunds {
		if c.terminating[r.ns] {
			continue
		}
		err := c.w.store.Get(context.Background(), objectKey(r.ns, r.name), r.object())
		if !isNotFound(err) {
			continue
		}
		synced = append(synced, r.ns+"/"+r.name)
		c.apply(t, r.object())
	}
	return synced
}

// resolve is a person resolving a job by its annotation: charged= the
// charge under its key (right), charged= another charge or one that
// does not exist (wrong), or not-charged (right only when nothing was
// charged under its key).
func (c *campaign) resolve(t *rapid.T) {
	r := c.pickStuck(t, kindJob)
	job := c.m.jobOf(r.key.Namespace, r.key.Name)
	ids := []string{"pi_doesnotexist"}
	if in, ok := c.w.sbx.LookupByKey(job.sentKey()); ok {
		ids = append(ids, in.ID)
	}
	intents, err := c.w.intents()
	if err != nil {
		t.Fatalf("cannot list the provider's charges: %v", err)
	}
	for _, in := range intents {
		ids = append(ids, in.ID)
	}
	value := "not-charged"
	if rapid.Bool().Draw(t, "charged") {
		value = "charged=" + rapid.SampledFrom(ids).Draw(t, "id")
	}
	obj := c.w.newObject(kindJob)
	if err := c.w.store.Get(context.Background(), r.key, obj); err != nil {
		t.Fatalf("cannot read %s: %v", r, err)
	}
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[paymentsv1alpha1.AnnotationResolve] = value
	a[paymentsv1alpha1.AnnotationResolvedBy] = "alice@example.com"
	obj.SetAnnotations(a)
	charged, _ := c.w.sbx.LookupByKey(job.sentKey())
	t.Logf("a person resolves %s (phase %s) as %q; the provider holds %q under its key %s",
		r, obj.(*paymentsv1alpha1.PaymentJob).Status.Phase, value, charged.ID, job.sentKey())
	if err := c.w.store.Update(context.Background(), obj); err != nil {
		t.Fatalf("cannot annotate %s: %v", r, err)
	}
}

// approve is a person approving a suspended job: spec.suspend=false.
func (c *campaign) approve(t *rapid.T) {
	r := c.pickUnfinished(t, kindJob)
	job := &paymentsv1alpha1.PaymentJob{}
	if err := c.w.store.Get(context.Background(), r.key, job); err != nil {
		t.Fatalf("cannot read %s: %v", r, err)
	}
	if job.Spec.Suspend == nil || !*job.Spec.Suspend {
		t.Skip("not suspended")
	}
	job.Spec.Suspend = ptr.To(false)
	t.Logf("a person approves %s (spec.suspend=false)", r)
	if err := c.w.store.Update(context.Background(), job); err != nil {
		t.Fatalf("cannot approve %s: %v", r, err)
	}
}
