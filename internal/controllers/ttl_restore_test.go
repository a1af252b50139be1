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

package controllers_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentjob"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/ttl"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
)

// emptyLedger holds nothing and counts what is recorded in it.
type emptyLedger struct{ records atomic.Int64 }

func (l *emptyLedger) Find(context.Context, string) (ledger.Entry, bool, error) {
	return ledger.Entry{}, false, nil
}
func (l *emptyLedger) Has(context.Context, string) (bool, error) { return false, nil }
func (l *emptyLedger) Record(context.Context, ledger.Entry) error {
	l.records.Add(1)
	return nil
}

// A job scheduled for its TTL when it finished, then taken back to
// Processing with its ledger entry gone (etcd restored from a snapshot
// taken before it finished): when it comes due the collector neither
// records an outcome it does not have (a Completed entry without a charge,
// which as the key's first entry would win over the real one) nor deletes it.
func TestCollectorLeavesAJobThatIsNoLongerFinished(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 3, 14, 10, 30, 0, 0, time.UTC)
	restored := &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: "invoice", Namespace: "billing", UID: "9d2f1c7e"},
		Spec:       jobSpec(),
		Status:     paymentsv1alpha1.PaymentJobStatus{PaymentStatus: paymentsv1alpha1.PaymentStatus{Phase: paymentsv1alpha1.PhaseProcessing, Attempts: 1}},
	}
	restored.Spec.TTLSecondsAfterFinished = ptr.To(int32(30))
	var gets, deletes atomic.Int64
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(restored).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if key.Name == restored.Name {
				gets.Add(1)
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			deletes.Add(1)
			return c.Delete(ctx, obj, opts...)
		},
	}).Build()
	clock := clocktesting.NewFakeClock(now)
	outcomes := &emptyLedger{}
	collector := &ttl.FinishedJobCollector{Kinds: []engine.AnyKind{paymentjob.Kind()}, Client: c, Reader: c,
		Ledger: outcomes, DefaultTTL: -1, Clock: clock}

	// What the collector remembered when the job finished, before the
	// restore.
	finished := restored.DeepCopy()
	finished.Status.Phase = paymentsv1alpha1.PhaseCompleted
	finished.Status.CompletedAt = ptr.To(metav1.NewTime(now.Add(-time.Minute)))
	collector.Schedule(paymentjob.Kind(), finished)

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- collector.Start(ctx) }()
	g.Eventually(func() int64 { clock.Step(time.Second); return gets.Load() }, 10*time.Second, 10*time.Millisecond).
		Should(BeNumerically(">=", 1), "the due job was read")
	cancel()
	g.Eventually(stopped, 10*time.Second).Should(Receive(BeNil()))

	g.Expect(outcomes.records.Load()).To(BeZero(), "no outcome recorded for a job that has none")
	g.Expect(deletes.Load()).To(BeZero(), "the job is not deleted")
	var job paymentsv1alpha1.PaymentJob
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(restored), &job)).To(Succeed())
	g.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseProcessing))
}
