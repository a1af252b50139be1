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

package ledgertest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// The cases. Each makes a store of its own, records under keys as the
// engine makes them (payment.ScopedKey, the kinds' Key) and reports the
// first way the ledger breaks the contract.

// Who the handles of a case are, in its errors.
const (
	firstProcess = "the first process"
	otherProcess = "the other process"
)

// chargeAmount and chargeCurrency are what the charges of the cases move.
const (
	chargeAmount   = 1999
	chargeCurrency = "eur"
)

func checkFirstOutcomeWins(ctx context.Context, s suite) error {
	handles, err := open(ctx, s.store(Options{}), 2)
	if err != nil {
		return err
	}
	a, b := handles[0], handles[1]
	now := time.Now()
	key := payment.ScopedKey("", "shop", "order-1")
	first := completed(key, "pi_3PqFirst0LkdIwHu7ix", stripeLive, now)
	// The same process records another outcome (a second job under the
	// key), then another process does, at another account: neither is
	// stored, and each is told what the key holds.
	second := declined(key, stripeLive, now.Add(time.Minute))
	third := completed(key, "pi_3PqThird0LkdIwHu7ix", httpService, now.Add(2*time.Minute))

	if err := a.Record(ctx, first); err != nil {
		return fmt.Errorf("cannot record the first outcome: %w", err)
	}
	if err := expectRecorded(a.Record(ctx, second), second, first, firstProcess+", recording a second outcome"); err != nil {
		return err
	}
	if err := expectEntry(ctx, a, first, firstProcess+", after it recorded a second outcome"); err != nil {
		return err
	}
	if err := expectRecorded(b.Record(ctx, third), third, first, otherProcess+", recording a third outcome"); err != nil {
		return err
	}
	if err := expectEntry(ctx, b, first, otherProcess+", after it recorded a third outcome"); err != nil {
		return err
	}
	if err := expectEntry(ctx, a, first, firstProcess+", after the other recorded a third outcome"); err != nil {
		return err
	}

	// Two outcomes of a key handed to one process at once (its writes are
	// shared): one is stored, whole, and stays.
	var charges, refusals []ledger.Entry
	for i := range 20 {
		key := payment.ScopedKey("", "shop", fmt.Sprintf("burst-%02d", i))
		charges = append(charges, completed(key, fmt.Sprintf("pi_3PqBurst%02dLkdIwHu7ix", i), stripeLive, now))
		refusals = append(refusals, declined(key, stripeLive, now.Add(time.Second)))
	}
	burst := named{a, firstProcess + ", handed both outcomes of a key at once"}
	chargeErrs, refusalErrs := recordBoth(ctx, burst, charges, burst, refusals)
	for i := range charges {
		kept, err := agreedOutcome(ctx, []named{burst}, charges[i], refusals[i])
		if err != nil {
			return err
		}
		if err := expectRecorded(chargeErrs[i], charges[i], kept, burst.who); err != nil {
			return err
		}
		if err := expectRecorded(refusalErrs[i], refusals[i], kept, burst.who); err != nil {
			return err
		}
		for _, e := range []ledger.Entry{refusals[i], charges[i]} {
			if err := expectRecorded(a.Record(ctx, e), e, kept, firstProcess+", recording both outcomes again"); err != nil {
				return err
			}
		}
		if err := expectEntry(ctx, a, kept, firstProcess+", after it recorded both outcomes again"); err != nil {
			return err
		}
	}
	return nil
}

func checkConflictReported(ctx context.Context, s suite) error {
	handles, err := open(ctx, s.store(Options{}), 2)
	if err != nil {
		return err
	}
	a, b := handles[0], handles[1]
	now := time.Now()
	// Two jobs of one key and another amount: B was refused and recorded
	// first; A was charged, and its outcome is not the ledger's.
	key := payment.ScopedKey("", "shop", "order-9")
	refusedB := declined(key, stripeLive, now)
	chargedA := completed(key, "pi_3PqChargedALkdIwHu7ix", stripeLive, now.Add(time.Minute))
	if err := a.Record(ctx, refusedB); err != nil {
		return fmt.Errorf("cannot record the first outcome: %w", err)
	}
	for _, h := range []named{{a, firstProcess}, {b, otherProcess}} {
		if err := expectRecorded(h.l.Record(ctx, chargedA), chargedA, refusedB, h.who+", recording another outcome under a held key"); err != nil {
			return err
		}
	}
	// The same outcome again (a crash between the record and the
	// finalizer: another time, another reason) is recorded, not a conflict.
	again := refusedB
	again.At, again.Reason = now.Add(time.Hour), payment.ReasonKeyReused
	for _, h := range []named{{a, firstProcess}, {b, otherProcess}} {
		if err := h.l.Record(ctx, again); err != nil {
			return fmt.Errorf("%s: a Record of the outcome %q holds, again = %w; want nil: it is the same outcome", h.who, key, err)
		}
	}
	// Each field that tells outcomes apart makes a conflict.
	others := map[string]func(*ledger.Entry){
		"another charge":      func(e *ledger.Entry) { e.Charge = "pi_3PqOtherChargeLkdIwHu7" },
		"another fingerprint": func(e *ledger.Entry) { e.Fingerprint += "0" },
		"another account":     func(e *ledger.Entry) { e.Provider = stripeTestEU },
		"another outcome":     func(e *ledger.Entry) { e.Outcome, e.Reason = paymentsv1alpha1.LedgerCompleted, "" },
	}
	for what, change := range others {
		other := refusedB
		change(&other)
		if err := expectRecorded(b.Record(ctx, other), other, refusedB, otherProcess+", recording "+what); err != nil {
			return err
		}
	}
	if err := expectEntry(ctx, b, refusedB, otherProcess+", after the conflicts"); err != nil {
		return err
	}
	// A key that holds a charge: the conflict of a refusal under it does
	// not name the charge, which may be another tenant's.
	heldCharge := completed(payment.ScopedKey("", "shop", "order-10"), "pi_3PqHeldChargeLkdIwHu7", stripeLive, now)
	if err := a.Record(ctx, heldCharge); err != nil {
		return fmt.Errorf("cannot record %q: %w", heldCharge.Key, err)
	}
	refused := declined(heldCharge.Key, stripeLive, now.Add(time.Minute))
	return expectRecorded(b.Record(ctx, refused), refused, heldCharge, otherProcess+", recording a refusal under a key that holds a charge")
}

func checkMissingKey(ctx context.Context, s suite) error {
	handles, err := open(ctx, s.store(Options{}), 2)
	if err != nil {
		return err
	}
	a, b := handles[0], handles[1]
	key := payment.ScopedKey("", "shop", "order-1")
	for _, h := range []named{{a, firstProcess + ", on an empty store"}, {b, otherProcess + ", on an empty store"}} {
		if err := expectAbsent(ctx, h.l, key, h.who); err != nil {
			return err
		}
	}
	e := completed(key, "pi_3PqOrder1LkdIwHu7ix", stripeLive, time.Now())
	if err := a.Record(ctx, e); err != nil {
		return fmt.Errorf("cannot record %q: %w", key, err)
	}
	if err := expectEntry(ctx, a, e, "the process that recorded it"); err != nil {
		return err
	}
	// Keys one step away from the recorded one: each is another payment.
	near := []string{
		payment.ScopedKey("", "shop", "order-10"),
		payment.ScopedKey("", "shop", "order-"),
		payment.ScopedKey("", "shop", "Order-1"),
		payment.ScopedKey("", "shop2", "order-1"),
		payment.ScopedKey("eu", "shop", "order-1"),
		payment.RefundKey("", "shop", "order-1"),
	}
	for _, h := range []named{{a, "the process that recorded " + key}, {b, otherProcess}} {
		h.who += ", for a key never recorded"
		for _, k := range near {
			if err := expectAbsent(ctx, h.l, k, h.who); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkEveryField(ctx context.Context, s suite) error {
	st := s.store(Options{})
	handles, err := open(ctx, st, 1)
	if err != nil {
		return err
	}
	a := handles[0]
	// Not in UTC, and with nanoseconds: the ledger stores the instant.
	at := time.Now().Add(-time.Hour).In(time.FixedZone("UTC+01:30", 90*60))
	resolvedCharge := completed(payment.ScopedKey("", "billing", "invoice-2026-0042"), "pi_3PqResolvedLkdIwHu7ix", stripeLive, at.Add(2*time.Minute))
	resolvedCharge.Reason, resolvedCharge.ResolvedBy = paymentsv1alpha1.ReasonResolved, "alice@example.com"
	resolvedRefusal := declined(payment.ScopedKey("", "billing", "invoice-2026-0043"), stripeLive, at.Add(3*time.Minute))
	resolvedRefusal.Reason, resolvedRefusal.ResolvedBy = paymentsv1alpha1.ReasonResolved, "system:serviceaccount:billing:approver"
	// A nanosecond before a second ends: kept in the second it is in.
	endOfSecond := at.Truncate(time.Second).Add(time.Second - time.Nanosecond)
	entries := []ledger.Entry{
		completed(payment.ScopedKey("eu", "shop", "order-1"), "pi_3PqOrder1LkdIwHu7ix", stripeTestEU, at),
		declined(payment.ScopedKey("", "shop", "order-2"), httpService, endOfSecond),
		resolvedCharge,
		resolvedRefusal,
	}
	// At once: the entries, of three provider accounts, share writes.
	if err := recordAll(ctx, a, entries); err != nil {
		return err
	}
	later, err := open(ctx, st, 1)
	if err != nil {
		return err
	}
	for _, h := range []named{{a, "the process that recorded them"}, {later[0], "a process started afterwards"}} {
		for _, e := range entries {
			if err := expectEntry(ctx, h.l, e, h.who); err != nil {
				return err
			}
			if err := expectHas(ctx, h.l, e.Key, h.who); err != nil {
				return err
			}
		}
	}
	return nil
}

func checkDurable(ctx context.Context, s suite) error {
	st := s.store(Options{})
	handles, err := open(ctx, st, 2)
	if err != nil {
		return err
	}
	a, running := handles[0], handles[1]
	now := time.Now()
	entries := make([]ledger.Entry, 25)
	for i := range entries {
		entries[i] = completed(payment.ScopedKey("", "shop", fmt.Sprintf("order-%02d", i)), fmt.Sprintf("pi_3PqDurable%02dLkdIwHu7ix", i), stripeLive, now)
	}
	if err := recordAll(ctx, a, entries); err != nil {
		return err
	}
	started, err := open(ctx, st, 1)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := expectEntry(ctx, started[0], e, "a process started after Record returned"); err != nil {
			return err
		}
		if err := expectHas(ctx, started[0], e.Key, "a process started after Record returned"); err != nil {
			return err
		}
	}
	return eventually(ctx, Visibility, func() error {
		for _, e := range entries {
			if err := expectEntry(ctx, running, e, "a process that was running when Record returned"); err != nil {
				return err
			}
		}
		return nil
	})
}

func checkTwoProcesses(ctx context.Context, s suite) error {
	st := s.store(Options{})
	handles, err := open(ctx, st, 2)
	if err != nil {
		return err
	}
	a, b := handles[0], handles[1]
	now := time.Now()
	// Each process records every key, with an outcome of its own: a
	// crash recovery, or two clusters sharing a database.
	fromA, fromB := make([]ledger.Entry, TwoProcessKeys), make([]ledger.Entry, TwoProcessKeys)
	for i := range TwoProcessKeys {
		key := payment.ScopedKey("", "fleet", fmt.Sprintf("pay-%03d", i))
		fromA[i] = completed(key, fmt.Sprintf("pi_3PqEast%03dLkdIwHu7ix", i), stripeLive, now)
		fromB[i] = declined(key, httpService, now.Add(time.Second))
	}
	first, other := named{a, firstProcess}, named{b, otherProcess}
	errsA, errsB := recordBoth(ctx, first, fromA, other, fromB)
	winners := make([]ledger.Entry, TwoProcessKeys)
	for i := range TwoProcessKeys {
		if winners[i], err = agreedOutcome(ctx, []named{first, other}, fromA[i], fromB[i]); err != nil {
			return err
		}
		if err := expectRecorded(errsA[i], fromA[i], winners[i], first.who); err != nil {
			return err
		}
		if err := expectRecorded(errsB[i], fromB[i], winners[i], other.who); err != nil {
			return err
		}
	}
	// Both record again, each the other's outcome: the first one stays.
	errsA, errsB = recordBoth(ctx, first, fromB, other, fromA)
	for i := range TwoProcessKeys {
		if err := expectRecorded(errsA[i], fromB[i], winners[i], first.who+", recording again"); err != nil {
			return err
		}
		if err := expectRecorded(errsB[i], fromA[i], winners[i], other.who+", recording again"); err != nil {
			return err
		}
	}
	third, err := open(ctx, st, 1)
	if err != nil {
		return err
	}
	for i, w := range winners {
		for _, h := range []named{first, other, {third[0], "a third process"}} {
			if err := expectEntry(ctx, h.l, w, h.who+", after both recorded the key again"); err != nil {
				return err
			}
		}
		if err := expectHas(ctx, a, w.Key, firstProcess); err != nil {
			return err
		}
		if err := expectHas(ctx, b, fromB[i].Key, otherProcess); err != nil {
			return err
		}
	}
	return nil
}

// recordBoth records, at once, each entry of fromA through a and each of
// fromB through b, each in an order of its own, and returns the result of
// each Record, in the order of fromA and of fromB.
func recordBoth(ctx context.Context, a named, fromA []ledger.Entry, b named, fromB []ledger.Entry) (errsA, errsB []error) {
	var wg sync.WaitGroup
	errsA, errsB = make([]error, len(fromA)), make([]error, len(fromB))
	orderA, orderB := rand.Perm(len(fromA)), rand.Perm(len(fromB))
	for i := range max(len(fromA), len(fromB)) {
		if i < len(fromA) {
			j := orderA[i]
			wg.Go(func() { errsA[j] = a.l.Record(ctx, fromA[j]) })
		}
		if i < len(fromB) {
			j := orderB[i]
			wg.Go(func() { errsB[j] = b.l.Record(ctx, fromB[j]) })
		}
	}
	wg.Wait()
	return errsA, errsB
}

// agreedOutcome returns the entry that every handle finds under the key of
// one and other, both recorded: one of the two, whole.
func agreedOutcome(ctx context.Context, handles []named, one, other ledger.Entry) (ledger.Entry, error) {
	key := one.Key
	var agreed *named
	var found ledger.Entry
	for _, h := range handles {
		e, ok, err := h.l.Find(ctx, key)
		switch {
		case err != nil:
			return ledger.Entry{}, fmt.Errorf("%s: Find(%q): %w", h.who, key, err)
		case !ok:
			return ledger.Entry{}, fmt.Errorf("%s: Find(%q) found nothing, after two outcomes were recorded", h.who, key)
		case len(diff(e, one)) > 0 && len(diff(e, other)) > 0:
			return ledger.Entry{}, fmt.Errorf("%s: Find(%q) = %s: neither outcome recorded (%s, %s)",
				h.who, key, describe(e), describe(one), describe(other))
		case agreed != nil && len(diff(e, found)) > 0:
			return ledger.Entry{}, fmt.Errorf("the processes disagree on %q: %s finds %s, %s finds %s",
				key, agreed.who, describe(found), h.who, describe(e))
		}
		agreed, found = &h, e
	}
	if len(diff(found, one)) == 0 {
		return one, nil
	}
	return other, nil
}

func checkRefunds(ctx context.Context, s suite) error {
	st := s.store(Options{})
	handles, err := open(ctx, st, 2)
	if err != nil {
		return err
	}
	a, b := handles[0], handles[1]
	at := time.Now().Add(-time.Hour)
	// A PaymentJob and its PaymentRefund of the same name: the same key in
	// their spec, which the refund kind keys apart ("shop.refund/order-7").
	charge := jobEntry("shop", "order-7", "pi_3PqOrder7LkdIwHu7ix", at)
	refund := refundEntry("shop", "order-7", "order-7", "pi_3PqOrder7LkdIwHu7ix", "re_3PqOrder7LkdIwHu7ix", nil, at.Add(time.Minute))
	partial := refundEntry("shop", "order-7-partial", "order-7", "pi_3PqOrder7LkdIwHu7ix", "", new(int64(500)), at.Add(2*time.Minute))
	if charge.Key == refund.Key || refund.Key == partial.Key {
		return fmt.Errorf("the engine keys a charge and its refunds %q, %q and %q: not apart", charge.Key, refund.Key, partial.Key)
	}

	if err := a.Record(ctx, charge); err != nil {
		return fmt.Errorf("cannot record the charge: %w", err)
	}
	if err := expectAbsent(ctx, a, refund.Key, "a process that recorded the charge but not its refund"); err != nil {
		return err
	}
	if err := recordAll(ctx, a, []ledger.Entry{refund, partial}); err != nil {
		return err
	}
	later, err := open(ctx, st, 1)
	if err != nil {
		return err
	}
	for _, h := range []named{{a, "the process that recorded them"}, {later[0], "a process started afterwards"}} {
		for _, e := range []ledger.Entry{charge, refund, partial} {
			if err := expectEntry(ctx, h.l, e, h.who); err != nil {
				return err
			}
		}
	}

	// A refund recorded before its charge (the charge's job finished
	// before the ledger existed, and the TTL collector records it late).
	charge8 := jobEntry("shop", "order-8", "pi_3PqOrder8LkdIwHu7ix", at)
	refund8 := refundEntry("shop", "order-8", "order-8", "pi_3PqOrder8LkdIwHu7ix", "re_3PqOrder8LkdIwHu7ix", nil, at.Add(time.Minute))
	if err := b.Record(ctx, refund8); err != nil {
		return fmt.Errorf("cannot record the refund: %w", err)
	}
	if err := expectAbsent(ctx, b, charge8.Key, "a process that recorded a refund but not its charge"); err != nil {
		return err
	}
	if err := b.Record(ctx, charge8); err != nil {
		return fmt.Errorf("cannot record the charge after its refund: %w", err)
	}
	for _, e := range []ledger.Entry{charge8, refund8} {
		if err := expectEntry(ctx, b, e, "the process that recorded the refund first"); err != nil {
			return err
		}
	}
	return nil
}

func checkRetention(ctx context.Context, s suite) error {
	now := time.Date(2027, 6, 1, 12, 0, 0, 0, time.UTC)
	const retention = 30 * 24 * time.Hour
	clk := clocktesting.NewFakePassiveClock(now)
	st := s.store(Options{Retention: retention, Clock: clk})
	handles, err := open(ctx, st, 2)
	if err != nil {
		return err
	}
	a, running := handles[0], handles[1]
	// Whole units of expired entries (an hour past the retention), then
	// whole units of entries exactly as old as the retention (kept: the
	// retention is how long entries are kept at least), then one of now.
	n := s.b.PruneUnit * ((10 + s.b.PruneUnit - 1) / s.b.PruneUnit)
	expired, kept := make([]ledger.Entry, n), make([]ledger.Entry, n)
	for i := range n {
		expired[i] = completed(payment.ScopedKey("", "shop", fmt.Sprintf("expired-%02d", i)), fmt.Sprintf("pi_3PqExpired%02dLkdIwHu7ix", i),
			stripeLive, now.Add(-retention-time.Hour))
		kept[i] = completed(payment.ScopedKey("", "shop", fmt.Sprintf("kept-%02d", i)), fmt.Sprintf("pi_3PqKept%02dLkdIwHu7ix", i),
			stripeLive, now.Add(-retention))
	}
	newest := completed(payment.ScopedKey("", "shop", "newest"), "pi_3PqNewestLkdIwHu7ix", stripeLive, now)
	for _, group := range [][]ledger.Entry{expired, kept, {newest}} {
		if err := recordAll(ctx, a, group); err != nil {
			return err
		}
	}
	if err := a.Prune(ctx); err != nil {
		return fmt.Errorf("cannot prune: %w", err)
	}
	later, err := open(ctx, st, 1)
	if err != nil {
		return err
	}
	stay := append(slices.Clone(kept), newest)
	step := fmt.Sprintf("after a prune at %s with a retention of %s", now.Format(time.RFC3339), retention)
	for _, h := range []named{{a, "the process that pruned, " + step}, {later[0], "a process started " + step}} {
		if err := expectPruned(ctx, h.l, expired, stay, h.who); err != nil {
			return err
		}
	}
	if err := eventually(ctx, Visibility, func() error {
		return expectPruned(ctx, running, expired, stay, "a process running during the prune, "+step)
	}); err != nil {
		return err
	}

	// An hour later, the kept entries are an hour past the retention.
	clk.SetTime(now.Add(time.Hour))
	if err := a.Prune(ctx); err != nil {
		return fmt.Errorf("cannot prune: %w", err)
	}
	step = fmt.Sprintf("after a prune at %s with a retention of %s", clk.Now().Format(time.RFC3339), retention)
	return expectPruned(ctx, a, kept, []ledger.Entry{newest}, "the process that pruned, "+step)
}
