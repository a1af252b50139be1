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

package campaign

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// The oracle: the three books read whole, the provider's (the sandbox's
// charges and refunds), the cluster's (the objects in the fake API server)
// and the ledger's (the PaymentLedger pages), and the invariants between
// them and the model.

// books are the three books at one moment.
type books struct {
	intents map[string]sandbox.Intent
	refunds map[string]sandbox.Refund
	// accounts is the account of each intent; intents, refunds and stats
	// are both accounts' (stats summed; charged counts each account's
	// charges by key).
	accounts map[string]string
	charged  map[string]map[string]int
	stats    sandbox.Stats
	jobs     []paymentsv1alpha1.PaymentJob
	refs     []paymentsv1alpha1.PaymentRefund
	ledger   []ledger.Entry
}

// violations are the safety invariants the books break, one line each.
func (m *model) violations(b books) []string {
	return slices.Concat(m.providerViolations(b), m.jobViolations(b), m.refundViolations(b), m.ledgerViolations(b),
		m.sharedLedgerViolations(b), failedAfterSuccessViolations(b))
}

// providerViolations: at most one charge per key, whichever account it
// reached (a key charged at both accounts is one payment made twice), and
// at most one per key and account for a key several manifests send (the
// provider's memory is per account, and the ledger may record the first
// outcome after the second manifest's first pass); but for a key no book
// remembered once the provider forgot it (nor, for a key several
// manifests send, the ledger: a new object looks there only). Each charge
// for a request some manifest sending that key asked; at most one refund
// per key; the refunds of a charge never beyond it.
func (m *model) providerViolations(b books) []string {
	var v []string
	for key, n := range b.stats.ChargesByKey {
		if n <= 1 || m.forgotten[key] || m.unrecorded[key] && m.sharedKey(key) {
			continue
		}
		if !m.sharedKey(key) {
			v = append(v, fmt.Sprintf("at-most-one-charge: key %s charged %d times over the accounts", key, n))
			continue
		}
		for acct, keys := range b.charged {
			if keys[key] > 1 {
				v = append(v, fmt.Sprintf("at-most-one-charge: key %s charged %d times at account %s", key, keys[key], acct))
			}
		}
	}
	v = append(v, m.refundKeyViolations(b)...)
	for _, in := range b.intents {
		if in.Status != sandbox.StatusSucceeded {
			continue
		}
		// A charge someone else made under our key asked for nothing of ours.
		asked := m.behind.outside[in.ID] != ""
		for _, j := range m.manifestsSending(in.IdempotencyKey) {
			asked = asked || j.amount == in.Amount
		}
		if !asked {
			v = append(v, fmt.Sprintf("charged-as-asked: %s charged %d under key %s, which no manifest asked", in.ID, in.Amount, in.IdempotencyKey))
		}
		var refunded int64
		for _, r := range b.refunds {
			if r.PaymentIntent == in.ID && r.Status != sandbox.RefundStatusFailed {
				refunded += r.Amount
			}
		}
		if refunded > in.Amount {
			v = append(v, fmt.Sprintf("refunds-within-charge: %s of %d refunded %d", in.ID, in.Amount, refunded))
		}
	}
	return v
}

// jobViolations: a Completed job's charge is at the provider under its
// own key, account and amount; a Failed job moved no money of its own;
// but for a person's resolution the provider could not check.
func (m *model) jobViolations(b books) []string {
	var v []string
	// The keys whose ledger entry a person resolved: the entry does not
	// keep whether the provider checked the resolution, so an object
	// finished from it later stands on the person's word too
	// (docs/reliability.md, Honest limits).
	resolved := map[string]bool{}
	for _, e := range b.ledger {
		if e.ResolvedBy != "" {
			resolved[e.Key] = true
		}
	}
	for i := range b.jobs {
		j := &b.jobs[i]
		name := "PaymentJob " + j.Namespace + "/" + j.Name
		st := j.Status
		if onPersonsWord(&st.PaymentStatus, resolved) {
			continue
		}
		switch st.Phase {
		case paymentsv1alpha1.PhaseCompleted:
			if st.ProviderResponse == nil {
				v = append(v, fmt.Sprintf("completed-is-charged: %s is Completed without a provider response", name))
				continue
			}
			in, ok := b.intents[st.ProviderResponse.ID]
			switch {
			case !ok:
				v = append(v, fmt.Sprintf("completed-is-charged: %s is Completed as %s, which the provider does not hold", name, st.ProviderResponse.ID))
			case in.Status != sandbox.StatusSucceeded || in.IdempotencyKey != st.IdempotencyKey || in.Amount != j.Spec.Amount:
				v = append(v, fmt.Sprintf("completed-is-charged: %s (key %s, amount %d) is Completed as %s: %s, key %s, amount %d",
					name, st.IdempotencyKey, j.Spec.Amount, in.ID, in.Status, in.IdempotencyKey, in.Amount))
			case st.Provider != nil && st.Provider.Account != "" && st.Provider.Account != b.accounts[in.ID]:
				v = append(v, fmt.Sprintf("completed-is-charged: %s, sent to account %s, is Completed as %s, a charge of account %s",
					name, st.Provider.Account, in.ID, b.accounts[in.ID]))
			}
		case paymentsv1alpha1.PhaseFailed:
			key := m.jobOf(j.Namespace, j.Name).sentKey()
			if st.ProviderResponse != nil && b.intents[st.ProviderResponse.ID].Status == sandbox.StatusSucceeded {
				v = append(v, fmt.Sprintf("failed-moved-nothing: %s is Failed but names the charge %s", name, st.ProviderResponse.ID))
			}
			if b.stats.ChargesByKey[key] > 0 && !m.sharedKey(key) {
				v = append(v, fmt.Sprintf("failed-moved-nothing: %s is Failed but the provider charged its key %s", name, key))
			}
		}
	}
	return v
}

// onPersonsWord reports whether a job's outcome stands on a person's word
// the provider could not check: its own resolution recorded as not
// verified (its PaymentProvider reached another account then: engine,
// providerSpeaks), or a ledger entry a person resolved that it was
// finished from.
func onPersonsWord(st *paymentsv1alpha1.PaymentStatus, resolved map[string]bool) bool {
	if st.Resolution != nil {
		return !st.Resolution.Verified
	}
	return resolved[st.IdempotencyKey] && readyReason(st.Conditions) == paymentsv1alpha1.ReasonFoundInLedger
}

// ledgerViolations: every key recorded once, and the outcome of every
// finished object whose key is its own equal to its ledger entry.
func (m *model) ledgerViolations(b books) []string {
	var v []string
	entries := map[string]ledger.Entry{}
	for _, e := range b.ledger {
		if _, dup := entries[e.Key]; dup {
			v = append(v, fmt.Sprintf("ledger-once: key %s recorded twice", e.Key))
		}
		entries[e.Key] = e
	}
	check := func(name, key string, phase paymentsv1alpha1.PaymentJobPhase, charge string) {
		e, ok := entries[key]
		if !ok || !finished(phase) {
			return
		}
		if string(e.Outcome) != string(phase) || (phase == paymentsv1alpha1.PhaseCompleted && e.Charge != charge) {
			v = append(v, fmt.Sprintf("ledger-agrees: %s is %s as %q, the ledger says %s as %q under %s",
				name, phase, charge, e.Outcome, e.Charge, key))
		}
	}
	for i := range b.jobs {
		j := &b.jobs[i]
		if key := j.Status.IdempotencyKey; key != "" && !m.sharedKey(key) {
			check("PaymentJob "+j.Namespace+"/"+j.Name, key, j.Status.Phase, responseID(j.Status.ProviderResponse))
		}
	}
	for i := range b.refs {
		rf := &b.refs[i]
		if key := rf.Status.IdempotencyKey; key != "" && !failedAfterSuccess(rf) {
			check("PaymentRefund "+rf.Namespace+"/"+rf.Name, key, rf.Status.Phase, responseID(rf.Status.ProviderResponse))
		}
	}
	return v
}

func responseID(r *paymentsv1alpha1.ProviderResponse) string {
	if r == nil {
		return ""
	}
	return r.ID
}

// stuck are the objects that, after quiescence, are neither finished nor
// Stalled with a reason that tells a person what to do.
func stuck(b books) []string {
	var s []string
	for i := range b.jobs {
		j := &b.jobs[i]
		if why := unfinished(j.Status.Phase, j.Status.Conditions, j.DeletionTimestamp != nil); why != "" {
			s = append(s, fmt.Sprintf("PaymentJob %s/%s %s", j.Namespace, j.Name, why))
		}
	}
	for i := range b.refs {
		rf := &b.refs[i]
		why := unfinished(rf.Status.Phase, rf.Status.Conditions, rf.DeletionTimestamp != nil)
		if why == "" {
			continue
		}
		// A refund waiting for its payment waits on a person when the
		// payment itself does (Stalled, or suspended): the job's
		// condition says what to do.
		if job := b.job(rf.Namespace, rf.Spec.PaymentJobRef.Name); job != nil {
			if unfinished(job.Status.Phase, job.Status.Conditions, false) == "" && !finished(job.Status.Phase) &&
				readyReason(rf.Status.Conditions) == paymentsv1alpha1.ReasonPaymentNotCompleted {
				continue
			}
			why += fmt.Sprintf("; its job %s is %q (Ready reason %q)", job.Name, job.Status.Phase, readyReason(job.Status.Conditions))
		}
		s = append(s, fmt.Sprintf("PaymentRefund %s/%s %s", rf.Namespace, rf.Name, why))
	}
	return append(s, unrecorded(b)...)
}

// unrecorded: once the world is quiet, every object that moved money
// (Completed) has an outcome in the ledger under its key, its own or, for a
// key several jobs share, the first one recorded. A finished object's
// finalizer goes only after its Record; a world that never wrote its
// ledger would pass every rule that compares the two.
func unrecorded(b books) []string {
	keys := map[string]bool{}
	for _, e := range b.ledger {
		keys[e.Key] = true
	}
	var s []string
	for i := range b.jobs {
		j := &b.jobs[i]
		if key := j.Status.IdempotencyKey; j.Status.Phase == paymentsv1alpha1.PhaseCompleted && !keys[key] {
			s = append(s, fmt.Sprintf("PaymentJob %s/%s is Completed, and the ledger holds nothing under its key %q", j.Namespace, j.Name, key))
		}
	}
	for i := range b.refs {
		rf := &b.refs[i]
		if key := rf.Status.IdempotencyKey; rf.Status.Phase == paymentsv1alpha1.PhaseCompleted && !keys[key] {
			s = append(s, fmt.Sprintf("PaymentRefund %s/%s is Completed, and the ledger holds nothing under its key %q", rf.Namespace, rf.Name, key))
		}
	}
	return s
}

// job is the PaymentJob ns/name of the books, or nil.
func (b books) job(ns, name string) *paymentsv1alpha1.PaymentJob {
	for i := range b.jobs {
		if b.jobs[i].Namespace == ns && b.jobs[i].Name == name {
			return &b.jobs[i]
		}
	}
	return nil
}

// finished reports whether phase is Completed or Failed.
func finished(phase paymentsv1alpha1.PaymentJobPhase) bool {
	return phase == paymentsv1alpha1.PhaseCompleted || phase == paymentsv1alpha1.PhaseFailed
}

// isStalled reports whether conds hold Stalled=True.
func isStalled(conds []metav1.Condition) bool {
	return meta.IsStatusConditionTrue(conds, paymentsv1alpha1.ConditionStalled)
}

// readyReason is the reason of the Ready condition, or "".
func readyReason(conds []metav1.Condition) string {
	if c := meta.FindStatusCondition(conds, paymentsv1alpha1.ConditionReady); c != nil {
		return c.Reason
	}
	return ""
}

// unfinished says why an object is neither terminal nor Stalled, or "".
func unfinished(phase paymentsv1alpha1.PaymentJobPhase, conds []metav1.Condition, deleting bool) string {
	stalled := meta.FindStatusCondition(conds, paymentsv1alpha1.ConditionStalled)
	switch {
	case stalled != nil && stalled.Status == "True" && stalled.Reason != "":
		return ""
	case readyReason(conds) == paymentsv1alpha1.ReasonSuspended:
		// Waits for a person's approval.
		return ""
	case deleting:
		return fmt.Sprintf("is still being deleted in phase %q, not Stalled", phase)
	case phase == paymentsv1alpha1.PhaseCompleted || phase == paymentsv1alpha1.PhaseFailed:
		return ""
	}
	return fmt.Sprintf("waits in phase %q (Ready reason %q), not Stalled", phase, readyReason(conds))
}
