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
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// reconcileAlone runs a reconciliation with nothing else to do: its wall
// time against the floor, and the manager's heap while it runs against the
// heap of the idle manager just before, measure the run and nothing else
// (the jobs charged beside the second run would count their own memory).
func (b *bench) reconcileAlone(ctx context.Context, w reconWindow, res *reconResult) error {
	cfg := b.cfg
	floor := reconFloor(cfg.reconPayments, reconRequestsPerSecond)
	rps := int32(reconRequestsPerSecond)
	run := func(name string, from, to time.Time) *paymentsv1alpha1.PaymentReconciliation {
		return &paymentsv1alpha1.PaymentReconciliation{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: paymentsv1alpha1.PaymentReconciliationSpec{
				ProviderRef:       paymentsv1alpha1.ProviderObjectReference{Namespace: nsRecon, Name: providerName},
				From:              &metav1.Time{Time: from},
				To:                &metav1.Time{Time: to},
				RequestsPerSecond: &rps,
			},
		}
	}
	// A warm-up over an empty window, as the jobs before it warmed the
	// charges' path: what stays after the first run of a process (the
	// JSON codecs of the provider's list types, the controller's
	// workqueue) is no run's memory.
	warm := run(reconName+"-warmup", w.from.Add(-2*time.Hour), w.from.Add(-time.Hour))
	if err := b.cl.creator.Create(ctx, warm); err != nil {
		return fmt.Errorf("cannot create the warm-up reconciliation: %w", err)
	}
	var warmed paymentsv1alpha1.PaymentReconciliationStatus
	if _, err := b.waitReconciled(ctx, warm.Name, cfg.timeout, &warmed); err != nil {
		return err
	}
	var err error
	if res.heapBefore, _, err = b.memory(ctx, "recon-before"); err != nil {
		return err
	}
	pr := run(reconName, w.from, w.to)
	step("reconciliation: creating a run over %d payments at %d requests/s (floor %s), alone",
		cfg.reconPayments, rps, floor.Round(time.Millisecond))
	sampler := startHeapSampler(ctx, b.mgr)
	created := time.Now()
	if err := b.cl.creator.Create(ctx, pr); err != nil {
		sampler.stop()
		return fmt.Errorf("cannot create the reconciliation: %w", err)
	}
	completed, err := b.waitReconciled(ctx, pr.Name, max(cfg.timeout, 3*floor), &res.status)
	res.heapPeak, res.samples = sampler.stop()
	if err != nil {
		return err
	}
	res.wall = completed.Sub(created)
	step("reconciliation alone: Completed %s after its create (floor %s, ratio %.2f); %d provider requests; heap %.1f MiB before, peak %.1f MiB in %d samples",
		res.wall.Round(time.Millisecond), floor.Round(time.Millisecond), res.wall.Seconds()/floor.Seconds(), res.status.ProviderRequests,
		res.heapBefore/(1<<20), res.heapPeak/(1<<20), res.samples)
	return nil
}
