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
	"errors"
	"fmt"
	"math"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentreconciliation"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
	psandbox "github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// Phase 9: a PaymentReconciliation of -recon-payments payments at Stripe's
// live-mode limits. Its wall time against the floor its list rate sets,
// the manager's heap while it runs against before, and the throughput of
// jobs charged beside it against the same jobs without it.

// Namespaces of the reconciliation phase: nsRecon holds the provider the
// run reconciles (and is the namespace of the seeded payments' keys); the
// jobs charged without the run, beside it, and without it again each have
// their own, with a provider that reaches the same sandbox account.
const (
	nsRecon         = "bench-recon"
	nsReconNone1    = "bench-recon-charges-none-1"
	nsReconBeside   = "bench-recon-charges-beside"
	nsReconNone2    = "bench-recon-charges-none-2"
	reconName       = "bench-recon"
	reconPollPeriod = 100 * time.Millisecond
	// heapSamplePeriod is how often the manager's post-GC heap is read
	// while the run goes on (each read forces a garbage collection).
	heapSamplePeriod = time.Second
)

// reconNamespaces are the namespaces of the phase, each with a provider at
// the live sandbox.
var reconNamespaces = []string{nsRecon, nsReconNone1, nsReconBeside, nsReconNone2}

// reconRequestsPerSecond is the run's budget (spec.requestsPerSecond): the
// default, a quarter of Stripe's live read limit, as a user leaves it.
const reconRequestsPerSecond = paymentreconciliation.DefaultRequestsPerSecond

// reconListPages are the list requests a run over n charges (and no
// refund or dispute) makes: ceil(n / 100) pages of charges, one of refunds
// and one of disputes.
func reconListPages(n int) int {
	return (n+psandbox.MaxListLimit-1)/psandbox.MaxListLimit + 2
}

// reconFloor is the shortest a run over n charges can take at a budget of
// perSecond requests: its list pages at that rate.
func reconFloor(n, perSecond int) time.Duration {
	return time.Duration(float64(reconListPages(n)) / float64(perSecond) * float64(time.Second))
}

// reconResult is what the run measured.
type reconResult struct {
	// wall is create to Completed of the run alone, as the bench saw it;
	// besideWall the same of the run beside the jobs.
	wall, besideWall time.Duration
	// heapBefore is the post-GC heap before the run, heapPeak the largest
	// post-GC heap sampled while it ran; samples counts them.
	heapBefore, heapPeak float64
	samples              int
	status               paymentsv1alpha1.PaymentReconciliationStatus
	seedLedger, seedBook time.Duration
	// none and beside are the jobs charged without the run (two halves)
	// and beside it; besideDone says whether the run was still going when
	// the last of them completed.
	none, beside runResult
	besideDone   bool
}

// reconPhase seeds the books, starts a manager on them, charges the first
// half of the jobs without a reconciliation, runs one with the other jobs
// charged beside it, then the second half without.
func (b *bench) reconPhase(ctx context.Context) error {
	cfg := b.cfg
	n := cfg.reconPayments
	b.stopManager()
	w := reconWindowBefore(time.Now())
	id, err := b.reconIdentity(ctx)
	if err != nil {
		return err
	}
	var res reconResult
	if err := b.cl.deleteLedger(ctx); err != nil {
		return err
	}
	start := time.Now()
	if err := b.cl.seedReconLedger(ctx, n, nsRecon, id, w); err != nil {
		return err
	}
	res.seedLedger = time.Since(start)
	step("reconciliation: %d ledger pages of %d payments created in %s", reconPages(n), n, res.seedLedger.Round(time.Millisecond))
	start = time.Now()
	if err := seedReconIntents(ctx, b.live.URL, n, nsRecon, w); err != nil {
		return err
	}
	res.seedBook = time.Since(start)
	step("reconciliation: %d PaymentIntents put at the live sandbox in %s (%.0f/s)", n, res.seedBook.Round(time.Millisecond), float64(n)/res.seedBook.Seconds())

	startup, err := b.startManager(ctx, userManager, cfg.workers, "--reconciliation-settle-margin=0s")
	if err != nil {
		return err
	}
	step("reconciliation: manager ready after %s; settling for %s while the ledger reads its pages", startup.Round(time.Millisecond), cfg.settle)
	if err := b.settle(ctx, cfg.settle); err != nil {
		return err
	}
	half := cfg.reconJobs / 2
	if res.none, err = b.reconChargeRun(ctx, "recon: no run 1/2", nsReconNone1, half, id); err != nil {
		return err
	}
	if err := b.reconcileAlone(ctx, w, &res); err != nil {
		return err
	}
	if err := checkReconStatus(res.status, n); err != nil {
		return err
	}
	if err := b.reconcileBeside(ctx, w, &res); err != nil {
		return err
	}
	second, err := b.reconChargeRun(ctx, "recon: no run 2/2", nsReconNone2, cfg.reconJobs-half, id)
	if err != nil {
		return err
	}
	res.none = res.none.plus(second)
	if err := checkReconStatus(res.status, n); err != nil {
		return err
	}
	b.addReconFigures(res)
	return nil
}

// reconIdentity is the account the operator records for the providers of
// the phase: the uid of nsRecon's provider, the live sandbox's URL and
// account, and the test mode of the bench's sk_test_ key. A reconciliation
// matches ledger entries by account and mode (providercache.SameBooks);
// reconChargeRun checks it against what the manager records.
func (b *bench) reconIdentity(ctx context.Context) (paymentsv1alpha1.ProviderIdentity, error) {
	uid, err := b.cl.providerUID(ctx, nsRecon)
	if err != nil {
		return paymentsv1alpha1.ProviderIdentity{}, err
	}
	st, err := b.live.Stats(ctx)
	if err != nil {
		return paymentsv1alpha1.ProviderIdentity{}, err
	}
	return paymentsv1alpha1.ProviderIdentity{UID: uid, Endpoint: b.live.URL, Account: st.Account, Mode: "test"}, nil
}

// reconChargeRun charges n jobs in ns at the live sandbox, sampling the
// heap as the run beside the reconciliation does, and checks that the
// manager recorded the books the ledger was seeded with.
func (b *bench) reconChargeRun(ctx context.Context, name, ns string, n int, seeded paymentsv1alpha1.ProviderIdentity) (runResult, error) {
	sampler := startHeapSampler(ctx, b.mgr)
	pctx, cancel := context.WithTimeout(ctx, b.cfg.timeout)
	res, err := b.runJobsKeeping(pctx, name, ns, n, b.live)
	cancel()
	sampler.stop()
	if err != nil {
		return res, err
	}
	var job paymentsv1alpha1.PaymentJob
	if err := b.cl.creator.Get(ctx, types.NamespacedName{Namespace: ns, Name: jobName(0)}, &job); err != nil {
		return res, fmt.Errorf("cannot read a job of %s: %w", ns, err)
	}
	if job.Status.Provider == nil {
		return res, fmt.Errorf("%s/%s records no provider", ns, job.Name)
	}
	if same, why := providercache.SameBooks(seeded, *job.Status.Provider, true); !same {
		return res, fmt.Errorf("the seeded ledger's account is not the one the manager records (%+v): %s", *job.Status.Provider, why)
	}
	return res, b.deleteJobs(ctx, ns)
}

// reconcileBeside creates the reconciliation and, at once, charges
// -recon-jobs jobs beside it; it samples the manager's heap until the run
// is Completed.
func (b *bench) reconcileBeside(ctx context.Context, w reconWindow, res *reconResult) error {
	cfg := b.cfg
	floor := reconFloor(cfg.reconPayments, reconRequestsPerSecond)
	rps := int32(reconRequestsPerSecond)
	pr := &paymentsv1alpha1.PaymentReconciliation{
		ObjectMeta: metav1.ObjectMeta{Name: reconName + "-beside"},
		Spec: paymentsv1alpha1.PaymentReconciliationSpec{
			ProviderRef:       paymentsv1alpha1.ProviderObjectReference{Namespace: nsRecon, Name: providerName},
			From:              &metav1.Time{Time: w.from},
			To:                &metav1.Time{Time: w.to},
			RequestsPerSecond: &rps,
		},
	}
	step("reconciliation: creating the run over %d payments at %d requests/s (floor %s), %d jobs charged beside it",
		cfg.reconPayments, rps, floor.Round(time.Millisecond), cfg.reconJobs)
	created := time.Now()
	if err := b.cl.creator.Create(ctx, pr); err != nil {
		return fmt.Errorf("cannot create the reconciliation: %w", err)
	}
	done := make(chan error, 1)
	var completed time.Time
	go func() {
		var err error
		completed, err = b.waitReconciled(ctx, pr.Name, max(cfg.timeout, 3*floor), &res.status)
		done <- err
	}()
	pctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	beside, jobsErr := b.runJobsKeeping(pctx, "recon: beside the run", nsReconBeside, cfg.reconJobs, b.live)
	cancel()
	jobsEnd := time.Now()
	waitErr := <-done
	if err := errors.Join(jobsErr, waitErr); err != nil {
		return err
	}
	res.besideWall = completed.Sub(created)
	res.beside = beside
	res.besideDone = jobsEnd.Before(completed)
	step("reconciliation beside the jobs: Completed %s after its create (floor %s, ratio %.2f); %d provider requests",
		res.besideWall.Round(time.Millisecond), floor.Round(time.Millisecond), res.besideWall.Seconds()/floor.Seconds(), res.status.ProviderRequests)
	if !res.besideDone {
		step("reconciliation: the run completed before the jobs beside it did")
	}
	return b.deleteJobs(ctx, nsReconBeside)
}

// waitReconciled polls the reconciliation until it is Completed or Failed,
// and returns when the bench saw it Completed.
func (b *bench) waitReconciled(ctx context.Context, name string, timeout time.Duration, into *paymentsv1alpha1.PaymentReconciliationStatus) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		var pr paymentsv1alpha1.PaymentReconciliation
		if err := b.cl.creator.Get(ctx, client.ObjectKey{Name: name}, &pr); err != nil {
			return time.Time{}, fmt.Errorf("cannot read the reconciliation: %w", err)
		}
		switch pr.Status.Phase {
		case paymentsv1alpha1.ReconciliationCompleted:
			*into = pr.Status
			return time.Now(), nil
		case paymentsv1alpha1.ReconciliationFailed:
			*into = pr.Status
			return time.Time{}, fmt.Errorf("the reconciliation Failed: %s", readyMessage(pr.Status))
		}
		if b.mgr.proc.Exited() {
			return time.Time{}, b.mgr.proc.ExitError()
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("the reconciliation was not Completed within %s (phase %q: %s); manager log: %s",
				timeout.Round(time.Second), pr.Status.Phase, readyMessage(pr.Status), b.mgr.proc.Log)
		}
		if err := sleep(ctx, reconPollPeriod); err != nil {
			return time.Time{}, err
		}
	}
}

// readyMessage is the message of the Ready condition, if any.
func readyMessage(st paymentsv1alpha1.PaymentReconciliationStatus) string {
	for _, c := range st.Conditions {
		if c.Type == paymentsv1alpha1.ConditionReady {
			return c.Reason + ": " + c.Message
		}
	}
	return "no Ready condition"
}

// checkReconStatus fails a run that did not balance the seeded books: n
// charges matched and not one discrepancy, from the list alone.
func checkReconStatus(st paymentsv1alpha1.PaymentReconciliationStatus, n int) error {
	s := st.Summary
	switch {
	case s == nil:
		return errors.New("the reconciliation is Completed without a summary")
	case s.Discrepancies != 0 || s.Matched != int64(n) || s.Charges != int64(n) || s.Refunds != 0:
		return fmt.Errorf("the reconciliation did not balance the seeded books: %d matched and %d discrepancies (%d charges, %d refunds) for %d payments; categories %v; %s",
			s.Matched, s.Discrepancies, s.Charges, s.Refunds, n, s.Categories, readyMessage(st))
	case !st.Listed:
		return errors.New("the reconciliation did not list the provider's books")
	}
	return nil
}

// heapSampler reads the manager's post-GC heap every heapSamplePeriod
// until stopped, and keeps the largest.
type heapSampler struct {
	cancel context.CancelFunc
	done   chan struct{}
	peak   float64
	n      int
}

// startHeapSampler starts sampling m's heap.
func startHeapSampler(ctx context.Context, m *manager) *heapSampler {
	sctx, cancel := context.WithCancel(ctx)
	s := &heapSampler{cancel: cancel, done: make(chan struct{}), peak: notMeasured}
	go func() {
		defer close(s.done)
		for {
			if h, err := m.heapAlloc(sctx); err == nil && !math.IsNaN(h) {
				s.n++
				if math.IsNaN(s.peak) || h > s.peak {
					s.peak = h
				}
			}
			if sleep(sctx, heapSamplePeriod) != nil {
				return
			}
		}
	}()
	return s
}

// stop stops the sampling and returns the peak and the samples.
func (s *heapSampler) stop() (float64, int) {
	s.cancel()
	<-s.done
	return s.peak, s.n
}

// addReconFigures reports phase 9.
func (b *bench) addReconFigures(res reconResult) {
	cfg := b.cfg
	n := cfg.reconPayments
	floor := reconFloor(n, reconRequestsPerSecond)
	title := fmt.Sprintf("reconciliation of %d payments", n)
	b.rep.add(figure{key: "recon_seconds", label: title + ": create to Completed", value: res.wall.Seconds(), kind: kindSeconds})
	b.rep.add(figure{key: "recon_seconds_beside", label: title + " beside the jobs: create to Completed", value: res.besideWall.Seconds(), kind: kindSeconds})
	b.rep.add(figure{key: "recon_floor_seconds", label: fmt.Sprintf("%s: floor, %d list pages at %d requests/s", title, reconListPages(n), reconRequestsPerSecond),
		value: floor.Seconds(), kind: kindSeconds})
	b.rep.add(figure{key: "recon_ratio_to_floor", label: title + ": wall time / floor", value: res.wall.Seconds() / floor.Seconds(),
		kind: kindRatio, target: atMostUnlessZero(cfg.maxReconRatio, "%.2f")})
	b.rep.add(figure{key: "recon_provider_requests", label: title + ": provider requests (status.providerRequests)",
		value: float64(res.status.ProviderRequests), kind: kindCount})
	b.rep.add(figure{key: "recon_matched", label: title + ": matched", value: float64(res.status.Summary.Matched), kind: kindCount, jsonOnly: true})
	b.rep.add(figure{key: "recon_discrepancies", label: title + ": discrepancies", value: float64(res.status.Summary.Discrepancies), kind: kindCount, target: zero()})
	b.rep.add(figure{key: "recon_heap_bytes_before", label: title + ": heap before the run", value: res.heapBefore, kind: kindBytes})
	b.rep.add(figure{key: "recon_heap_bytes_peak", label: fmt.Sprintf("%s: heap during the run, peak of %d samples", title, res.samples), value: res.heapPeak, kind: kindBytes})
	b.rep.add(figure{key: "recon_heap_ratio", label: title + ": heap during the run / before", value: res.heapPeak / res.heapBefore,
		kind: kindRatio, target: atMostUnlessZero(cfg.maxReconHeapRatio, "%.2f")})
	b.rep.add(figure{key: "jobs_per_sec_recon_none", label: "live limits, no reconciliation: throughput", value: res.none.jobsPerSec(), kind: kindRate})
	b.rep.add(figure{key: "jobs_per_sec_recon_beside", label: "live limits, beside the reconciliation: throughput", value: res.beside.jobsPerSec(), kind: kindRate})
	b.rep.add(figure{key: "recon_charge_ratio", label: "live limits: throughput beside the reconciliation / without",
		value: res.beside.jobsPerSec() / res.none.jobsPerSec(), kind: kindRatio, target: atLeastUnlessZero(cfg.minReconChargeRatio)})
	b.rep.add(perJob("charges_per_job_recon_beside", "beside the reconciliation: charges/job", res.beside.provider.Charges, int64(res.beside.n), onePerJob()))
	b.addLatency(res.beside, "_recon_beside", "beside the reconciliation")
	b.addCPU(res.beside.cpu, res.beside.n, "beside the reconciliation", "_recon_beside")
	b.rep.add(figure{key: "recon_seed_ledger_seconds", label: "reconciliation: ledger seeded in", value: res.seedLedger.Seconds(), kind: kindSeconds, jsonOnly: true})
	b.rep.add(figure{key: "recon_seed_intents_seconds", label: "reconciliation: intents seeded in", value: res.seedBook.Seconds(), kind: kindSeconds, jsonOnly: true})
	if !res.besideDone {
		b.rep.note("%s completed before the last of the %d jobs charged beside it: recon_charge_ratio partly measures jobs without a run.", title, res.beside.n)
	}
}
