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

package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controller"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// This file makes PaymentJobs, and the status contents the operator writes,
// for the baseline and the history phases.

// claimLease is the claim lease the baseline writes, the manager's default.
const claimLease = 60 * time.Second

// jobName is the name of the i-th job of a phase.
func jobName(i int) string { return fmt.Sprintf("job-%06d", i) }

// jobIndex is the i of a name made by jobName.
func jobIndex(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, "job-")
	if !ok {
		return 0, false
	}
	i, err := strconv.Atoi(rest)
	return i, err == nil && i >= 0
}

// newJob is the i-th job of a namespace: a plain card payment through the
// namespace's sandbox provider. Amounts are minor units.
func newJob(ns string, i int) *paymentsv1alpha1.PaymentJob {
	return &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: jobName(i), Namespace: ns},
		Spec: paymentsv1alpha1.PaymentJobSpec{
			ProviderRef:   paymentsv1alpha1.ProviderReference{Name: providerName},
			Amount:        int64(100 + i%9900),
			Currency:      "usd",
			PaymentMethod: "pm_card_visa",
			Description:   "Benchmark payment " + strconv.Itoa(i),
		},
	}
}

// chargeRequestOf is the request the operator sends for job.
func chargeRequestOf(job *paymentsv1alpha1.PaymentJob) payment.ChargeRequest {
	return payment.ChargeRequest{
		Amount:        job.Spec.Amount,
		Currency:      job.Spec.Currency,
		Customer:      job.Spec.Customer,
		PaymentMethod: job.Spec.PaymentMethod,
		Description:   job.Spec.Description,
		Metadata:      job.Spec.Metadata,
	}
}

// setJobConditions sets Ready, Reconciling and Stalled as the operator does
// for a Processing or a Completed job.
func setJobConditions(job *paymentsv1alpha1.PaymentJob, reason, msg string) {
	set := func(t string, s metav1.ConditionStatus, m string) {
		meta.SetStatusCondition(&job.Status.Conditions, metav1.Condition{
			Type: t, Status: s, Reason: reason, Message: m, ObservedGeneration: job.Generation,
		})
	}
	if job.Status.Phase == paymentsv1alpha1.PhaseCompleted {
		set(paymentsv1alpha1.ConditionReady, metav1.ConditionTrue, msg)
		set(paymentsv1alpha1.ConditionReconciling, metav1.ConditionFalse, "")
	} else {
		set(paymentsv1alpha1.ConditionReady, metav1.ConditionFalse, msg)
		set(paymentsv1alpha1.ConditionReconciling, metav1.ConditionTrue, msg)
	}
	set(paymentsv1alpha1.ConditionStalled, metav1.ConditionFalse, "")
	job.Status.ObservedGeneration = job.Generation
}

// claim sets the status of the operator's claim write.
func claim(job *paymentsv1alpha1.PaymentJob, holder string, now time.Time) {
	key := payment.SentKey(job.Namespace, payment.EffectiveKey(job.Name, job.Spec.IdempotencyKey))
	job.Status.Phase = paymentsv1alpha1.PhaseProcessing
	job.Status.IdempotencyKey = key
	job.Status.RequestHash = payment.RequestHash(key, chargeRequestOf(job))
	job.Status.Attempts++
	job.Status.Claim = &paymentsv1alpha1.Claim{
		Holder:     holder,
		AcquiredAt: metav1.NewMicroTime(now),
		ExpiresAt:  metav1.NewMicroTime(now.Add(claimLease)),
	}
	if job.Status.StartedAt == nil {
		job.Status.StartedAt = &metav1.Time{Time: now}
	}
	setJobConditions(job, controller.ReasonClaimed, fmt.Sprintf("Attempt %d claimed by %s until %s",
		job.Status.Attempts, holder, job.Status.Claim.ExpiresAt.UTC().Format(time.RFC3339)))
}

// complete sets the status of the operator's outcome write and returns the
// message of its event.
func complete(job *paymentsv1alpha1.PaymentJob, now time.Time) string {
	id := "pi_bench" + strings.ReplaceAll(string(job.UID), "-", "")[:16]
	created := metav1.NewTime(now.Add(-20 * time.Millisecond).Truncate(time.Second))
	completed := metav1.NewTime(now)
	job.Status.Phase = paymentsv1alpha1.PhaseCompleted
	job.Status.ProviderResponse = &paymentsv1alpha1.ProviderResponse{
		ID: id, Status: "succeeded", Amount: job.Spec.Amount, Currency: job.Spec.Currency, Created: &created,
	}
	job.Status.Failure = nil
	job.Status.Claim = nil
	job.Status.CompletedAt = &completed
	msg := fmt.Sprintf("Charged %d %s as %s", job.Spec.Amount, job.Spec.Currency, id)
	setJobConditions(job, controller.ReasonSucceeded, msg)
	return msg
}

// successEvent is the events.k8s.io/v1 Event the operator's recorder
// creates for a completed job.
func successEvent(job *paymentsv1alpha1.PaymentJob, holder, msg string, now time.Time) *eventsv1.Event {
	return &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%s.%x", job.Name, now.UnixNano()),
			Namespace: job.Namespace,
		},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: "paymentjob-controller",
		ReportingInstance:   holder,
		Action:              "Charge",
		Reason:              controller.ReasonSucceeded,
		Regarding: corev1.ObjectReference{
			Kind:            "PaymentJob",
			APIVersion:      paymentsv1alpha1.GroupVersion.String(),
			Namespace:       job.Namespace,
			Name:            job.Name,
			UID:             job.UID,
			ResourceVersion: job.ResourceVersion,
		},
		Note: msg,
		Type: corev1.EventTypeNormal,
	}
}

// runWorkers calls do(ctx, i) for i in [0, n) from workers goroutines. The
// first error cancels the others and is returned.
func runWorkers(ctx context.Context, workers, n int, do func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	for range max(1, min(workers, n)) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := do(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	return nil
}
