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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentjob"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// This file makes PaymentJobs and, for the baseline and the history
// phases, the status the operator's claim and outcome writes set: the
// operator's own functions (paymentjob.ChargeOf, ClaimStatus,
// CompletedStatus) given the sandbox's answer, so that the benchmark writes
// what the operator writes.

// claimLease is the claim lease the baseline writes, the manager's default.
const claimLease = engine.DefaultClaimLease

// The currency and the payment method of every payment the bench makes or
// seeds: a plain card payment in US dollars.
const (
	benchCurrency      = "usd"
	benchPaymentMethod = "pm_card_visa"
)

// jobName is the name of the i-th job of a phase.
func jobName(i int) string { return fmt.Sprintf("job-%06d", i) }

// jobIndex is the i of a name made by jobName.
func jobIndex(name string) (int, bool) { return nameIndex("job-", name) }

// nameIndex is the i of a name made of prefix and i.
func nameIndex(prefix, name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
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
			Currency:      benchCurrency,
			PaymentMethod: benchPaymentMethod,
			Description:   "Benchmark payment " + strconv.Itoa(i),
		},
	}
}

// claim sets what the operator's first claim of job sets, through provider
// by holder at now: the provider it charges through, recorded at the first
// claim, and paymentjob.ClaimStatus for the charge the job sends. It
// returns the conditions' message.
func claim(job *paymentsv1alpha1.PaymentJob, provider paymentsv1alpha1.ProviderIdentity, holder string, now time.Time) string {
	job.Status.Provider = &provider
	return paymentjob.ClaimStatus(job, paymentjob.ChargeOf(job), holder, now, claimLease, paymentsv1alpha1.ReasonClaimed)
}

// complete sets what the operator's outcome write sets when the sandbox
// answers the charge at now (paymentjob.CompletedStatus), and returns the
// reason and the message of the job's event.
func complete(job *paymentsv1alpha1.PaymentJob, now time.Time) (reason, message string) {
	return paymentjob.CompletedStatus(job, sandboxAnswer(job, now), false, now)
}

// sandboxAnswer is the sandbox's answer to the job's first charge request,
// which the baseline and the history do not send: a succeeded charge of
// the job's amount, created a moment before now, under an id of the
// sandbox's length derived from the job's UID.
func sandboxAnswer(job *paymentsv1alpha1.PaymentJob, now time.Time) payment.Outcome {
	uid := strings.ReplaceAll(string(job.UID), "-", "")
	return payment.Outcome{
		ID:       "pi_bench" + uid[:min(len(uid), 19)],
		Status:   "succeeded",
		Amount:   job.Spec.Amount,
		Currency: job.Spec.Currency,
		Created:  now.Add(-20 * time.Millisecond).Truncate(time.Second),
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
