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

package engine

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

func TestWrittenVersionsSkipOnlyOlderCopies(t *testing.T) {
	job := func(uid, rv string) *paymentsv1alpha1.PaymentJob {
		return &paymentsv1alpha1.PaymentJob{ObjectMeta: metav1.ObjectMeta{
			Namespace: "billing", Name: "invoice-42", UID: types.UID(uid), ResourceVersion: rv,
		}}
	}
	var w writtenVersions
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	if w.stale(job("a", "5"), now) {
		t.Fatal("a job this process never wrote is not stale")
	}
	w.record(job("a", "100"), now)

	tests := []struct {
		name  string
		job   *paymentsv1alpha1.PaymentJob
		stale bool
	}{
		{name: "older copy", job: job("a", "99"), stale: true},
		{name: "older copy, shorter version", job: job("a", "9"), stale: true},
		{name: "the copy this process wrote", job: job("a", "100"), stale: false},
		{name: "newer copy, written by someone else", job: job("a", "101"), stale: false},
		{name: "newer copy, longer version", job: job("a", "1000"), stale: false},
		{name: "version that is not an integer", job: job("a", "abc"), stale: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := w.stale(tt.job, now.Add(time.Second)); got != tt.stale {
				t.Errorf("stale(%s) = %v, want %v", tt.job.ResourceVersion, got, tt.stale)
			}
		})
	}

	// The same name, re-created: a new UID is never stale, and the old
	// entry goes.
	if w.stale(job("b", "7"), now) {
		t.Error("a re-created job is not stale")
	}
	if n := w.size(); n != 0 {
		t.Errorf("the re-created job's old entry was kept: %d entries", n)
	}

	w.record(job("b", "200"), now)
	w.forget(types.NamespacedName{Namespace: "billing", Name: "invoice-42"})
	if w.stale(job("b", "150"), now) || w.size() != 0 {
		t.Error("a forgotten job is remembered")
	}

	// An entry older than its TTL holds nothing back (resourceVersions that
	// went backwards after an etcd restore must not stop a job for good).
	w.record(job("c", "300"), now)
	if !w.stale(job("c", "299"), now.Add(writtenVersionTTL)) {
		t.Error("an older copy within the TTL is stale")
	}
	if w.stale(job("c", "299"), now.Add(writtenVersionTTL+time.Second)) || w.size() != 0 {
		t.Error("an entry past its TTL still holds the job back")
	}
}

// BenchmarkSetConditions measures the status computation of every reconcile
// that writes: the three kstatus conditions of a job, computed for the first
// time (fresh) and again without a change (unchanged).
func BenchmarkSetConditions(b *testing.B) {
	phases := []paymentsv1alpha1.PaymentJobPhase{
		paymentsv1alpha1.PhasePending, paymentsv1alpha1.PhaseProcessing,
		paymentsv1alpha1.PhaseCompleted, paymentsv1alpha1.PhaseFailed,
	}
	p := Progress{Reason: paymentsv1alpha1.ReasonSucceeded, Message: "Charged 2000 usd as pi_3Qx"}
	for _, phase := range phases {
		b.Run(string(phase)+"/fresh", func(b *testing.B) {
			job := &paymentsv1alpha1.PaymentJob{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
			job.Status.Phase = phase
			b.ReportAllocs()
			for b.Loop() {
				job.Status.Conditions = nil
				SetConditions(job, p)
			}
		})
		b.Run(string(phase)+"/unchanged", func(b *testing.B) {
			job := &paymentsv1alpha1.PaymentJob{ObjectMeta: metav1.ObjectMeta{Generation: 1}}
			job.Status.Phase = phase
			SetConditions(job, p)
			b.ReportAllocs()
			for b.Loop() {
				SetConditions(job, p)
			}
		})
	}
}
