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

package ttl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
)

// +kubebuilder:rbac:groups=payments.idempotency.dev,resources=paymentjobs,verbs=delete
// +kubebuilder:rbac:groups=payments.idempotency.dev,resources=paymentrefunds,verbs=delete

// FinishedJobCollector deletes Completed and Failed PaymentJobs once
// spec.ttlSecondsAfterFinished (or the manager's default) has passed since
// they finished, so that etcd does not grow with payment history. It deletes
// a job only once its own outcome is in the ledger; jobs finished before the
// ledger existed are recorded first. A job whose outcome is not the one the
// ledger holds under its key is never deleted: the engine finishes a job
// (the finished label this collector lists by) only once the ledger's
// Record said it holds the job's outcome, and otherwise stalls it
// (engine.LedgerConflicted), which this collector keeps even after a
// person took its finalizer off; a job recorded here that the ledger
// refuses (ledger.ConflictError) is kept too. A job that was itself finished from the
// ledger (deleted and created again, by a GitOps tool for example) is never
// deleted: deleting it again would only start another round of re-creation.
//
// Jobs this process finishes are deleted on time from memory; a sweep of
// the finished jobs, when the manager starts and then every SweepInterval,
// catches the rest (jobs finished by another replica or before a restart).
type FinishedJobCollector struct {
	// Kinds are the kinds whose finished objects are swept (PaymentJob,
	// PaymentRefund).
	Kinds []engine.AnyKind
	// Client deletes jobs.
	Client client.Client
	// Reader lists finished jobs from the API server: they are not cached.
	Reader client.Reader
	// Ledger must hold a job's outcome before the job is deleted.
	Ledger engine.OutcomeLedger
	// DefaultTTL applies to jobs without spec.ttlSecondsAfterFinished;
	// negative keeps them.
	DefaultTTL time.Duration
	// SweepInterval is the time between sweeps; an hour when zero.
	SweepInterval time.Duration
	// Namespaces, if any, restrict the sweep to them, as
	// pkg/operator's CacheOptions restricts the manager; empty sweeps every
	// namespace.
	Namespaces []string
	// Clock is the time source of deadlines.
	Clock clock.WithTicker

	mu   sync.Mutex
	due  []dueJob
	wake chan struct{}
}

// dueJob is a finished job and when it may be deleted.
type dueJob struct {
	name types.NamespacedName
	uid  types.UID
	kind engine.AnyKind
	key  string
	at   time.Time
}

// ttlOf is how long after it finished the job is kept, and false if it is
// kept for good.
func (c *FinishedJobCollector) ttlOf(k engine.AnyKind, job engine.Object) (time.Duration, bool) {
	if job.GetPaymentStatus().CompletedAt == nil || engine.FromLedger(job) || engine.LedgerConflicted(job) {
		return 0, false
	}
	if s := k.Terms(job).TTLSecondsAfterFinished; s != nil {
		return time.Duration(*s) * time.Second, true
	}
	return c.DefaultTTL, c.DefaultTTL >= 0
}

// Schedule remembers a job that was just finished, if it has a TTL.
func (c *FinishedJobCollector) Schedule(k engine.AnyKind, job engine.Object) {
	ttl, ok := c.ttlOf(k, job)
	if !ok {
		return
	}
	c.remember(dueJob{
		name: client.ObjectKeyFromObject(job), uid: job.GetUID(), kind: k,
		key: engine.KeyOf(k, job), at: job.GetPaymentStatus().CompletedAt.Add(ttl),
	})
	select {
	case c.wakeup() <- struct{}{}:
	default:
	}
}

// remember keeps a job that comes due before the next sweep; later ones
// are left to a sweep, so memory holds no more than a sweep interval's jobs.
func (c *FinishedJobCollector) remember(d dueJob) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d.at.Sub(c.Clock.Now()) > c.interval() || slices.ContainsFunc(c.due, func(x dueJob) bool { return x.uid == d.uid }) {
		return
	}
	c.due = append(c.due, d)
}

func (c *FinishedJobCollector) interval() time.Duration {
	if c.SweepInterval <= 0 {
		return time.Hour
	}
	return c.SweepInterval
}

func (c *FinishedJobCollector) wakeup() chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wake == nil {
		c.wake = make(chan struct{}, 1)
	}
	return c.wake
}

// NeedLeaderElection is false: replicas delete what they finish, and a
// job deleted twice is deleted once.
func (c *FinishedJobCollector) NeedLeaderElection() bool { return false }

// Start sweeps, then deletes jobs as they come due until ctx ends.
func (c *FinishedJobCollector) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("ttl")
	wake := c.wakeup()
	sweep := c.Clock.NewTicker(c.interval())
	defer sweep.Stop()
	if err := c.sweep(ctx); err != nil {
		logger.Error(err, "Cannot sweep finished payment jobs")
	}
	for {
		var (
			timer clock.Timer
			due   <-chan time.Time
		)
		if next, ok := c.next(); ok {
			timer = c.Clock.NewTimer(max(0, next.Sub(c.Clock.Now())))
			due = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-wake:
		case <-sweep.C():
			if err := c.sweep(ctx); err != nil {
				logger.Error(err, "Cannot sweep finished payment jobs")
			}
		case <-due:
			c.deleteDue(ctx)
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return nil
		}
	}
}

// SweepOnce runs one sweep now, as Start does when the manager starts and
// on every SweepInterval: it records the outcomes of finished jobs the
// ledger lacks, deletes the jobs whose TTL has passed and remembers the
// others that have one. Start calls it on its own; SweepOnce is for a caller
// that drives the collector's time itself (a test on a fake clock).
func (c *FinishedJobCollector) SweepOnce(ctx context.Context) error {
	return c.sweep(ctx)
}

// next is when the earliest remembered job comes due.
func (c *FinishedJobCollector) next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.due) == 0 {
		return time.Time{}, false
	}
	return slices.MinFunc(c.due, func(a, b dueJob) int { return a.at.Compare(b.at) }).at, true
}

// deleteDue deletes the remembered jobs whose time has come.
func (c *FinishedJobCollector) deleteDue(ctx context.Context) {
	now := c.Clock.Now()
	c.mu.Lock()
	var ready []dueJob
	c.due = slices.DeleteFunc(c.due, func(d dueJob) bool {
		if d.at.After(now) {
			return false
		}
		ready = append(ready, d)
		return true
	})
	c.mu.Unlock()
	for _, d := range ready {
		if err := c.delete(ctx, d); err != nil {
			log.FromContext(ctx).Error(err, "Cannot delete a finished payment job", "job", d.name)
		}
	}
}

// delete deletes a finished job whose outcome the ledger holds, and only
// that object: one created again under the same name has another uid.
func (c *FinishedJobCollector) delete(ctx context.Context, d dueJob) error {
	recorded := false
	if c.Ledger != nil {
		var err error
		if recorded, err = c.Ledger.Has(ctx, d.key); err != nil {
			return fmt.Errorf("cannot delete finished payment job %s: %w", d.name, err)
		}
	}
	if !recorded {
		obj := d.kind.New()
		if err := c.Reader.Get(ctx, d.name, obj); err != nil {
			return client.IgnoreNotFound(err)
		}
		if obj.GetUID() != d.uid || !engine.Terminal(obj.GetPaymentStatus().Phase) {
			return nil
		}
		if err := c.record(ctx, d.kind, obj); err != nil {
			return err
		}
	}
	job := d.kind.New()
	job.SetNamespace(d.name.Namespace)
	job.SetName(d.name.Name)
	uid := d.uid
	err := c.Client.Delete(ctx, job, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("cannot delete finished payment job: %w", err)
	}
	if err == nil {
		ttlDeletionsTotal.Inc()
		log.FromContext(ctx).V(1).Info("Deleted a finished payment job after its TTL; its outcome is in the ledger", "job", d.name)
	}
	return nil
}

// record stores a finished job's outcome in the ledger unless it is there.
func (c *FinishedJobCollector) record(ctx context.Context, k engine.AnyKind, job engine.Object) error {
	if c.Ledger == nil {
		return errors.New("no outcome ledger: finished jobs are kept")
	}
	key := engine.KeyOf(k, job)
	if !engine.Terminal(job.GetPaymentStatus().Phase) || engine.FromLedger(job) {
		// An unfinished job has no outcome to record: recording it would
		// write a Completed entry without a charge, and the first entry
		// of a key wins.
		return nil
	}
	if recorded, err := c.Ledger.Has(ctx, key); err != nil || recorded {
		return err
	}
	err := c.Ledger.Record(ctx, engine.LedgerEntry(job, k.Request(job, key), job.GetCreationTimestamp().Time))
	var conflict *ledger.ConflictError
	if errors.As(err, &conflict) {
		// Another object's outcome was recorded under the key first: this
		// job is the only record of its own, and is kept.
		log.FromContext(ctx).Info("Keeping a finished job: the outcome ledger holds another outcome under its key",
			"job", klog.KObj(job), "key", key, "heldOutcome", conflict.Held.Outcome, "heldCharge", conflict.Held.Charge)
		return fmt.Errorf("cannot delete finished %s %s: %w", k.Name(), klog.KObj(job), err)
	}
	return err
}

// sweep reads every finished job, a page at a time: it records in the ledger
// the outcomes of jobs finished before the ledger existed, deletes the jobs
// whose TTL has passed and remembers the others that have one.
func (c *FinishedJobCollector) sweep(ctx context.Context) error {
	if len(c.Namespaces) == 0 {
		return c.sweepNamespace(ctx, "")
	}
	var errs []error
	for _, ns := range c.Namespaces {
		errs = append(errs, c.sweepNamespace(ctx, ns))
	}
	return errors.Join(errs...)
}

// sweepNamespace sweeps one namespace, or every one for "".
func (c *FinishedJobCollector) sweepNamespace(ctx context.Context, ns string) error {
	errs := make([]error, 0, len(c.Kinds))
	for _, k := range c.Kinds {
		errs = append(errs, c.sweepKind(ctx, ns, k))
	}
	return errors.Join(errs...)
}

// sweepKind is sweepNamespace for the objects of one kind.
func (c *FinishedJobCollector) sweepKind(ctx context.Context, ns string, k engine.AnyKind) error {
	cont := ""
	for {
		list := k.NewList()
		err := c.Reader.List(ctx, list, client.InNamespace(ns), client.HasLabels{paymentsv1alpha1.LabelFinished},
			client.Limit(engine.FinishedListPage), client.Continue(cont))
		if err != nil {
			return fmt.Errorf("cannot list finished %ss: %w", k.Name(), err)
		}
		var items []engine.Object
		_ = meta.EachListItem(list, func(o runtime.Object) error {
			items = append(items, o.(engine.Object))
			return nil
		})
		var wg sync.WaitGroup
		errs := make([]error, len(items))
		for i := range items {
			wg.Go(func() { errs[i] = c.record(ctx, k, items[i]) })
		}
		wg.Wait()
		now := c.Clock.Now()
		for i, job := range items {
			ttl, ok := c.ttlOf(k, job)
			if errs[i] != nil || !ok {
				continue
			}
			d := dueJob{name: client.ObjectKeyFromObject(job), uid: job.GetUID(), kind: k, key: engine.KeyOf(k, job),
				at: job.GetPaymentStatus().CompletedAt.Add(ttl)}
			if d.at.After(now) {
				c.remember(d)
				continue
			}
			if err := c.delete(ctx, d); err != nil {
				errs[i] = err
			}
		}
		if err := errors.Join(errs...); err != nil {
			return err
		}
		if cont = list.GetContinue(); cont == "" {
			return nil
		}
	}
}
