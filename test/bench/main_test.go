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
	"io"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controller"
)

func TestParseFlags(t *testing.T) {
	t.Setenv("KUBEBUILDER_ASSETS", "/assets")
	tests := []struct {
		name    string
		args    []string
		check   func(g Gomega, c config)
		wantErr string
	}{
		{name: "defaults", args: nil, check: func(g Gomega, c config) {
			g.Expect(c.jobs).To(Equal(5000))
			g.Expect(c.workers).To(Equal(16))
			g.Expect(c.qps).To(Equal(float64(controller.DefaultKubeAPIQPS)))
			g.Expect(c.burst).To(Equal(controller.DefaultKubeAPIBurst))
			g.Expect(c.history).To(Equal(20000))
			g.Expect(c.scaleWorkers).To(Equal([]int{4, 16, 64}))
			g.Expect(c.scaleJobs).To(Equal(1000))
			g.Expect(c.assets).To(Equal("/assets"))
			g.Expect(c.results).To(Equal("docs/benchmarks.md"))
			g.Expect(c.jsonPath).To(BeEmpty())
			g.Expect(c.minRatio).To(Equal(0.8))
		}},
		{name: "CI's short run", args: []string{"-jobs", "1000", "-min-ratio", "0", "-results="}, check: func(g Gomega, c config) {
			g.Expect(c.minRatio).To(BeZero())
			g.Expect(c.results).To(BeEmpty())
		}},
		{name: "small run", args: []string{"-jobs", "500", "-history", "2000", "-scale-jobs", "200", "-scale-workers", " 8, 32 ", "-json", "/tmp/b.json"}, check: func(g Gomega, c config) {
			g.Expect(c.jobs).To(Equal(500))
			g.Expect(c.scaleWorkers).To(Equal([]int{8, 32}))
			g.Expect(c.jsonPath).To(Equal("/tmp/b.json"))
		}},
		{name: "no sweep", args: []string{"-scale-workers", ""}, check: func(g Gomega, c config) {
			g.Expect(c.scaleWorkers).To(BeEmpty())
		}},
		{name: "bad sweep", args: []string{"-scale-workers", "4,x"}, wantErr: "invalid -scale-workers"},
		{name: "zero jobs", args: []string{"-jobs", "0"}, wantErr: "at least 1"},
		{name: "zero qps", args: []string{"-qps", "0"}, wantErr: "positive"},
		{name: "no assets", args: []string{"-assets", ""}, wantErr: "KUBEBUILDER_ASSETS"},
		{name: "stray argument", args: []string{"now"}, wantErr: "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c, err := parseFlags(tt.args, io.Discard)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			tt.check(g, c)
		})
	}
}

func TestJobIndex(t *testing.T) {
	g := NewWithT(t)
	i, ok := jobIndex(jobName(4217))
	g.Expect(ok).To(BeTrue())
	g.Expect(i).To(Equal(4217))
	for _, name := range []string{"other", "job-", "job-x", "job--1"} {
		_, ok := jobIndex(name)
		g.Expect(ok).To(BeFalse(), name)
	}
}

func TestClaimAndCompleteWriteWhatTheOperatorWrites(t *testing.T) {
	g := NewWithT(t)
	job := newJob("ns", 7)
	job.UID = "0b0e7a6e-9c1d-4a53-8f2a-1f0cbd1c2e3f"
	job.Generation = 1
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	claim(job, "holder/1", now)
	g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
	g.Expect(job.Status.IdempotencyKey).To(Equal("ns/job-000007"))
	g.Expect(job.Status.RequestHash).To(HavePrefix("sha256:"))
	g.Expect(job.Status.Attempts).To(Equal(int32(1)))
	g.Expect(job.Status.Claim.Holder).To(Equal("holder/1"))
	g.Expect(job.Status.Claim.ExpiresAt.Sub(job.Status.Claim.AcquiredAt.Time)).To(Equal(claimLease))
	g.Expect(conditionStatus(job, paymentsv1alpha1.ConditionReady)).To(Equal(metav1.ConditionFalse))
	g.Expect(conditionStatus(job, paymentsv1alpha1.ConditionReconciling)).To(Equal(metav1.ConditionTrue))

	msg := complete(job, now)
	g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted))
	g.Expect(job.Status.Claim).To(BeNil())
	g.Expect(job.Status.ProviderResponse.Amount).To(Equal(job.Spec.Amount))
	g.Expect(job.Status.ProviderResponse.ID).To(Equal("pi_bench0b0e7a6e9c1d4a53"))
	g.Expect(job.Status.CompletedAt.Time).To(Equal(now))
	g.Expect(job.Status.ObservedGeneration).To(Equal(int64(1)))
	g.Expect(conditionStatus(job, paymentsv1alpha1.ConditionReady)).To(Equal(metav1.ConditionTrue))
	g.Expect(conditionStatus(job, paymentsv1alpha1.ConditionReconciling)).To(Equal(metav1.ConditionFalse))
	g.Expect(conditionStatus(job, paymentsv1alpha1.ConditionStalled)).To(Equal(metav1.ConditionFalse))
	g.Expect(msg).To(Equal("Charged 107 usd as pi_bench0b0e7a6e9c1d4a53"))

	ev := successEvent(job, "holder/1", msg, now)
	g.Expect(ev.Regarding.Name).To(Equal("job-000007"))
	g.Expect(ev.Reason).To(Equal(controller.ReasonSucceeded))
	g.Expect(ev.Type).To(Equal("Normal"))
}

func conditionStatus(job *paymentsv1alpha1.PaymentJob, t string) metav1.ConditionStatus {
	for _, c := range job.Status.Conditions {
		if c.Type == t {
			return c.Status
		}
	}
	return ""
}

func TestRunWorkers(t *testing.T) {
	g := NewWithT(t)
	var calls atomic.Int64
	seen := make([]atomic.Bool, 100)
	g.Expect(runWorkers(context.Background(), 8, 100, func(_ context.Context, i int) error {
		calls.Add(1)
		seen[i].Store(true)
		return nil
	})).To(Succeed())
	g.Expect(calls.Load()).To(Equal(int64(100)))
	for i := range seen {
		g.Expect(seen[i].Load()).To(BeTrue(), "job %d", i)
	}

	boom := errors.New("boom")
	calls.Store(0)
	err := runWorkers(context.Background(), 4, 1000, func(ctx context.Context, i int) error {
		calls.Add(1)
		if i == 10 {
			return boom
		}
		return ctx.Err()
	})
	g.Expect(err).To(MatchError(boom))
	g.Expect(calls.Load()).To(BeNumerically("<", 1000), "the first error stops the others")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g.Expect(runWorkers(ctx, 4, 10, func(context.Context, int) error { return nil })).To(MatchError(context.Canceled))
}
