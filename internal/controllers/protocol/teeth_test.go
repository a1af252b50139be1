//go:build campaignteeth

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

package protocol_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentjob"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/teeth"
)

// The teeth of the tables: each broken variant of the protocol
// (internal/teeth) turns a scenario of the tables whose books agree into
// one whose books do not. Built only with the campaignteeth tag:
//
//	go test -tags campaignteeth -run TestTeeth ./internal/controllers/protocol
//
// A tooth plays its scenario twice, whole and broken, and reads the books
// after each: they agree whole, and disagree broken in the way the
// variant's invariant names. The scenarios are the tables' rows, played
// without their effect lists (the variant changes those; what matters here
// is the money).

// tooth is one variant and a scenario that shows it.
type tooth struct {
	variant teeth.Variant
	name    string
	// play builds the scenario's world and plays its passes.
	play func(t *testing.T) *world
	// books says where the world's books disagree after the scenario, nil
	// when they agree.
	books func(w *world) error
	// found is what books says with the variant on.
	found string
}

// secondCharge is the provider's answer to a charge under a key it no
// longer remembers (Stripe forgets keys after 24 hours): a new charge.
var secondCharge answer = func() (payment.Outcome, error) { return succeededAs("pi_2", false), nil }

var theTeeth = []tooth{
	{
		variant: teeth.UnguardedClaim,
		found:   "though the job was Completed with pi_1",
		name:    "a stale read of a job another replica completed: claimed over its outcome, charged again",
		play: func(t *testing.T) *world {
			w := newWorld(t, row{job: newJob(withFinalizer), answers: []answer{secondCharge}})
			stale := w.job()
			completedByAnotherReplica(w)
			readOnce(w, stale)
			playPasses(t, w, step{})
			return w
		},
		books: func(w *world) error {
			if err := noneCharged(w, "the job was Completed with pi_1 by another replica"); err != nil {
				return err
			}
			if id := w.job().Status.ProviderResponse.ID; id != "pi_1" {
				return fmt.Errorf("the job's charge is %s, the provider holds pi_1 for it", id)
			}
			return nil
		},
	},
	{
		variant: teeth.LedgerErrorAsNotFound,
		found:   "though the ledger holds the key's charge pi_0",
		name:    "a re-created job whose outcome only the ledger holds, the ledger unavailable: charged again",
		play: func(t *testing.T) *world {
			w := newWorld(t, row{job: newJob(), answers: []answer{secondCharge},
				ledger: &ledgerState{entries: []ledger.Entry{ledgerEntry("")}, findErr: errors.New("database unavailable")}})
			playPasses(t, w, step{})
			return w
		},
		books: func(w *world) error { return noneCharged(w, "the ledger holds the key's charge pi_0") },
	},
	{
		variant: teeth.LedgerErrorAsNotFound,
		found:   "though the ledger holds the key's charge pi_0",
		name:    "Processing again after an etcd restore, the ledger outside etcd unavailable: sent again",
		play: func(t *testing.T) *world {
			w := newWorld(t, row{job: newJob(claimed(other, 2*time.Minute)), answers: []answer{secondCharge},
				ledger: &ledgerState{entries: []ledger.Entry{ledgerEntry("")}, findErr: errors.New("database unavailable"), outside: true}})
			playPasses(t, w, step{})
			return w
		},
		books: func(w *world) error { return noneCharged(w, "the ledger holds the key's charge pi_0") },
	},
	{
		variant: teeth.RefundWithoutLookup,
		found:   "gave back 2500 of a charge of 2000",
		name:    "1500 asked of a charge of 2000 that the provider holds 1000 refunds of: refunded over the charge",
		play: func(t *testing.T) *world {
			w := newRefundWorld(t, refundRow{refund: newRefund(refundOf(1500)), job: paidJob(),
				answers: []answer{refunded}, books: []book{holding(1000, nil)}})
			playPasses(t, w, step{})
			return w
		},
		books: func(w *world) error {
			back := int64(1000)
			for _, c := range w.provider.callsNamed("refund") {
				if c.err == nil {
					back += c.refund.Amount
				}
			}
			if back > amount {
				return fmt.Errorf("the provider gave back %d of a charge of %d", back, amount)
			}
			return nil
		},
	},
	{
		variant: teeth.RecordIgnoresLedger,
		found:   "the ledger holds Failed",
		name:    "the ledger holds another job's refusal under the key: the job finishes, the ledger keeps the refusal",
		play: func(t *testing.T) *world {
			w := newWorld(t, row{job: newJob(), answers: []answer{succeeded},
				ledger: &ledgerState{recordedMeanwhile: refusedLedgerEntry()}})
			playPasses(t, w, step{}, step{after: time.Minute})
			return w
		},
		books: func(w *world) error {
			job := w.job()
			if controllerutil.ContainsFinalizer(job, paymentsv1alpha1.Finalizer) {
				// Not finished: held for the conflict, as the ledger's
				// first-outcome rule wants.
				return nil
			}
			held, found, err := w.r.Ledger.Find(context.Background(), paymentjob.ChargeOf(job).Key)
			held, found = ledgerHolds(w, held, found)
			if err != nil || !found || held.Outcome != paymentsv1alpha1.LedgerCompleted || held.Charge != job.Status.ProviderResponse.ID {
				return fmt.Errorf("the job finished %s with %s, the ledger holds %s %q under its key (err %v)",
					job.Status.Phase, job.Status.ProviderResponse.ID, held.Outcome, held.Charge, err)
			}
			return nil
		},
	},
	{
		variant: teeth.ResolutionUnverified,
		found:   "Completed with pi_9, which the provider does not hold",
		name:    "a stalled job resolved as charged=pi_9, which the provider does not hold: Completed with it",
		play: func(t *testing.T) *world {
			// Taken over once its last attempt's backoff is over, charged
			// without an answer: RetriesExhausted, stalled. Then resolved.
			w := newWorld(t, row{job: newJob(backoffLimit(0), claimed(other, 2*time.Minute)), looker: true,
				answers: []answer{transient}, settle: declined})
			playPasses(t, w, step{after: 3 * time.Minute}, step{after: time.Minute, before: resolvedAs("charged=pi_9")})
			return w
		},
		books: func(w *world) error {
			// The provider answered no charge (transient) and holds no pi_9
			// (it refused to settle it): nothing it holds says Completed.
			if job := w.job(); job.Status.Phase == completed {
				return fmt.Errorf("the job is Completed with %s, which the provider does not hold", job.Status.ProviderResponse.ID)
			}
			return nil
		},
	},
	{
		variant: teeth.NoAccountFence,
		found:   "though the key was sent to acct_first",
		name:    "a job first sent to acct_first whose provider now reaches another account: charged there",
		play: func(t *testing.T) *world {
			w := newWorld(t, row{job: newJob(claimed(other, 2*time.Minute), sentToAccount("acct_first")),
				answers: []answer{secondCharge}})
			playPasses(t, w, step{})
			return w
		},
		books: func(w *world) error {
			return noneCharged(w, "the key was sent to acct_first; the provider now reaches another account")
		},
	},
}

// TestTeeth: every variant has a scenario; each scenario's books agree
// with the protocol whole and disagree with its variant switched on.
func TestTeeth(t *testing.T) {
	shown := map[teeth.Variant]bool{}
	for _, tt := range theTeeth {
		shown[tt.variant] = true
		t.Run(tt.variant.String()+": "+tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.books(tt.play(t))).To(Succeed(), "whole, the books agree")

			restore := teeth.Break(tt.variant)
			defer restore()
			err := tt.books(tt.play(t))
			g.Expect(err).To(MatchError(ContainSubstring(tt.found)), "broken (%s), the books disagree", tt.variant)
			t.Logf("%s: %v", tt.variant, err)
		})
	}
	for _, v := range teeth.All() {
		if !shown[v] {
			t.Errorf("variant %s has no scenario that shows it", v)
		}
	}
}

// playPasses runs steps in w as playSteps does, logging what each pass
// did instead of checking it.
func playPasses(t *testing.T, w *world, steps ...step) {
	for i, s := range steps {
		w.clock.Step(s.after)
		if s.before != nil {
			s.before(w)
		}
		p := w.reconcile(t, s.faults)
		t.Logf("pass %d: effects %q, events %q, error %v", i+1, p.effects, p.events, p.err)
	}
}

// noneCharged says so when the provider got a charge, though why says it
// must not.
func noneCharged(w *world, why string) error {
	if sent := w.provider.callsNamed("charge"); len(sent) > 0 {
		return fmt.Errorf("%d charge call(s) sent, though %s", len(sent), why)
	}
	return nil
}

// completedByAnotherReplica is another replica's charge of the world's
// job, recorded and finished (pi_1), made after the reconciler's read.
func completedByAnotherReplica(w *world) {
	ctx := context.Background()
	job := w.job()
	completedEarlier(job)
	finished(job)
	status := job.Status.DeepCopy()
	must(w.store.Update(ctx, job))
	job.Status = *status
	must(w.store.Status().Update(ctx, job))
}

// readOnce makes the reconciler's next read of the world's job answer
// stale, as an informer behind the API server does; later reads are
// fresh.
func readOnce(w *world, stale *paymentsv1alpha1.PaymentJob) {
	served := false
	w.r.Client = interceptor.NewClient(w.r.Client.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if job, ok := obj.(*paymentsv1alpha1.PaymentJob); ok && key == jobKey && !served {
				served = true
				stale.DeepCopyInto(job)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
}

// sentToAccount is a claimed job whose key went to account.
func sentToAccount(account string) func(*paymentsv1alpha1.PaymentJob) {
	return func(j *paymentsv1alpha1.PaymentJob) { j.Status.Provider.Account = account }
}

// ledgerHolds is what the world's ledger holds under the job's key: Find's
// answer, or the outcome another object recorded meanwhile (which Find
// does not see, and which Record keeps).
func ledgerHolds(w *world, found ledger.Entry, ok bool) (ledger.Entry, bool) {
	l := w.r.Ledger.(*fakeLedger)
	l.mu.Lock()
	defer l.mu.Unlock()
	if held := l.state.recordedMeanwhile; held != nil {
		return *held, true
	}
	return found, ok
}
