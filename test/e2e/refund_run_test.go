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
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// The refund plan of every refund scenario, over jobsPerScenario jobs of
// refundedCharge each (one in twenty declined, as planJobs plans them).
const (
	refundedCharge = 2000
	// partialRefunds jobs get one refund of firstRefund; twiceRefunded
	// jobs get firstRefund and secondRefund, which fit in the charge
	// together; wholeRefunds jobs get one refund of the whole charge
	// (spec.amount left out).
	partialRefunds, twiceRefunded, wholeRefunds = 80, 40, 30
	firstRefund, secondRefund                   = 700, 600
	// overRefunds jobs get one refund of more than the charge, and
	// declinedRefunds declined jobs one refund each: both fail without a
	// provider call, on purpose.
	overRefunds, declinedRefunds = 5, 5
	overRefund                   = refundedCharge + 500
	// refundsPerScenario is every refund of the plan.
	refundsPerScenario = partialRefunds + 2*twiceRefunded + wholeRefunds + overRefunds + declinedRefunds
	// refundsTimeout bounds the wait for every refund to end once every
	// job has.
	refundsTimeout = 2 * time.Minute
)

// plannedRefund is one PaymentRefund to create.
type plannedRefund struct {
	job  plannedJob
	name string
	// amount is spec.amount; 0 leaves it out: the whole charge.
	amount int64
	// early refunds are created with their job, and wait for it; the others
	// once their job is seen Completed or Failed.
	early bool
	// refusal is the reason the refund must fail with, without a provider
	// call; empty when it must be Completed.
	refusal string
}

// key is the refund's namespace/name.
func (p plannedRefund) key() string { return p.job.namespace + "/" + p.name }

// sentKey is the idempotency key the operator sends for the refund.
func (p plannedRefund) sentKey() string { return payment.RefundKey("", p.job.namespace, p.name) }

// refunded is the amount the refund must give back when Completed.
func (p plannedRefund) refunded() int64 {
	if p.amount == 0 {
		return p.job.amount
	}
	return p.amount
}

// object is the PaymentRefund to create.
func (p plannedRefund) object(scenario string) *paymentsv1alpha1.PaymentRefund {
	rf := &paymentsv1alpha1.PaymentRefund{
		ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: p.job.namespace, Labels: map[string]string{scenarioLabel: scenario}},
		Spec: paymentsv1alpha1.PaymentRefundSpec{
			ProviderRef:   paymentsv1alpha1.ProviderReference{Name: p.job.provider},
			PaymentJobRef: paymentsv1alpha1.PaymentJobReference{Name: p.job.name},
			Reason:        paymentsv1alpha1.RefundRequestedByCustomer,
		},
	}
	if p.amount > 0 {
		rf.Spec.Amount = &p.amount
	}
	return rf
}

// planRefunds plans the refunds of the jobs: the partial, double, whole,
// over-the-charge and declined ones of the plan's constants, a third of
// them early.
func planRefunds(jobs []plannedJob) []plannedRefund {
	var refunds []plannedRefund
	add := func(j plannedJob, amount int64, refusal string) {
		n := len(refunds)
		refunds = append(refunds, plannedRefund{job: j, amount: amount, refusal: refusal, early: n%3 == 0,
			name: fmt.Sprintf("refund-%s-%d", strings.TrimPrefix(j.name, "job-"), n)})
	}
	good, declined := 0, 0
	for _, j := range jobs {
		if j.declined {
			if declined < declinedRefunds {
				add(j, firstRefund, paymentsv1alpha1.ReasonPaymentFailed)
			}
			declined++
			continue
		}
		switch {
		case good < partialRefunds:
			add(j, firstRefund, "")
		case good < partialRefunds+twiceRefunded:
			add(j, firstRefund, "")
			add(j, secondRefund, "")
		case good < partialRefunds+twiceRefunded+wholeRefunds:
			add(j, 0, "")
		case good < partialRefunds+twiceRefunded+wholeRefunds+overRefunds:
			add(j, overRefund, paymentsv1alpha1.ReasonRefundExceedsCharge)
		}
		good++
	}
	return refunds
}

// refundRun is a scenario whose jobs are refunded while they are charged.
type refundRun struct {
	*scenario
	jobs    []plannedJob
	refunds []plannedRefund
	// created counts the refunds created; failed holds creation errors.
	created atomic.Int64
	failed  chan error
}

// newRefundRun starts the scenario refunds-<name> (newScenario) with jobs
// of refundedCharge and plans their refunds.
func newRefundRun(t *testing.T, name string, sandboxArgs ...string) *refundRun {
	s := newScenario(t, "refunds-"+name, sandboxArgs...)
	jobs := s.planJobs(jobsPerScenario, func(_ int, j *plannedJob) { j.amount = refundedCharge })
	r := &refundRun{scenario: s, jobs: jobs, refunds: planRefunds(jobs)}
	r.failed = make(chan error, len(r.refunds))
	NewWithT(t).Expect(r.refunds).To(HaveLen(refundsPerScenario), "not enough jobs for the refund plan")
	// Registered before the managers are started, it runs after they
	// are stopped.
	t.Cleanup(func() {
		if t.Failed() && !r.cluster.cp.stopped {
			r.dumpAndReleaseRefunds()
		}
	})
	return r
}

// start creates the jobs all at once, the early refunds with them, and
// every other refund as soon as its job is seen Completed or Failed.
func (r *refundRun) start() {
	ctx, cancel := context.WithCancel(context.Background())
	r.t.Cleanup(cancel)
	todo := make(chan plannedRefund, len(r.refunds))
	late := map[string][]plannedRefund{}
	for _, p := range r.refunds {
		if p.early {
			todo <- p
		} else {
			late[p.job.key()] = append(late[p.job.key()], p)
		}
	}
	// The watch's goroutine alone reads and writes late.
	r.watchJobs(func(ev watch.EventType, j *paymentsv1alpha1.PaymentJob) {
		key := j.Namespace + "/" + j.Name
		if ev == watch.Deleted || !terminal(j) || late[key] == nil {
			return
		}
		for _, p := range late[key] {
			todo <- p
		}
		delete(late, key)
	})
	for range 8 {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case p := <-todo:
					if err := r.createRefund(ctx, p); err != nil {
						r.failed <- err
					}
					r.created.Add(1)
				}
			}
		}()
	}
	r.createJobsAsync(r.jobs, 0)()
}

// createRefund creates one refund, retrying over API hiccups for a bounded
// time.
func (r *refundRun) createRefund(ctx context.Context, p plannedRefund) error {
	every := wait.Backoff{Duration: 200 * time.Millisecond, Steps: 300}
	err := retry.OnError(every, func(err error) bool { return ctx.Err() == nil && !apierrors.IsAlreadyExists(err) }, func() error {
		return r.cluster.k8s.Create(ctx, p.object(r.name))
	})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("cannot create refund %s: %w", p.key(), err)
	}
	return nil
}
