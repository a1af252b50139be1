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

package paymentreconciliation

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/books"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
)

// listPage is how many objects one list request of jobs or refunds reads.
const listPage = 100

// record is a cluster record with the time the window is judged by.
type record struct {
	books.Record
	// at is when the provider created the charge or refund, where the
	// cluster knows it, or when the outcome was recorded.
	at time.Time
}

// clusterBooks are the PaymentJobs and PaymentRefunds of one run: the finished
// ones of the account, and the keys still in flight. (The ledger's entries
// are read a slice of the window at a time.)
type clusterBooks struct {
	// inWindow are the records whose time is in the window.
	inWindow []record
	// byKey are all the records, in the window or not, by kind and key:
	// one outside it counts for a key the provider lists in it.
	byKey map[kindKey]record
	// inFlight are the keys of jobs and refunds whose outcome is not known
	// yet: what the provider holds under them is no finding.
	inFlight map[string]bool
	// settling are the keys among inFlight whose payment the provider
	// accepted and has not settled (AwaitingSettlement).
	settling map[string]bool
}

type kindKey struct {
	kind books.Kind
	key  string
}

// scope says which of the cluster's records a run reads: the account and
// its window, and the namespaces.
type scope struct {
	account      paymentsv1alpha1.ProviderIdentity
	accountsOnly bool
	from, to     time.Time
	namespaces   []string
}

// window reports whether t is in the window.
func (s scope) window(t time.Time) bool { return !t.Before(s.from) && t.Before(s.to) }

// ours reports whether a payment recorded at id was made at the account
// reconciled, and its key is of one of the namespaces.
func (s scope) ours(id *paymentsv1alpha1.ProviderIdentity, key string) bool {
	if id == nil {
		return false
	}
	if same, _ := providercache.SameBooks(*id, s.account, s.accountsOnly); !same {
		return false
	}
	return s.namespace(key)
}

// namespace reports whether key belongs to one of the namespaces (always,
// when there is no list of them).
func (s scope) namespace(key string) bool {
	if len(s.namespaces) == 0 {
		return true
	}
	return slices.Contains(s.namespaces, payment.KeyNamespace(key))
}

// gather reads the PaymentJobs and PaymentRefunds of the account from the
// API server (the cache leaves finished ones out), a page at a time: of
// the run's namespaces only, when it names them (what its creator was
// allowed to read, as the reconciliation-reader admission policy checked),
// of every namespace otherwise.
func gather(ctx context.Context, reader client.Reader, s scope) (*clusterBooks, error) {
	b := &clusterBooks{byKey: map[kindKey]record{}, inFlight: map[string]bool{}, settling: map[string]bool{}}
	add := func(r record) {
		if s.window(r.at) {
			b.inWindow = append(b.inWindow, r)
		}
		b.byKey[kindKey{r.Kind, r.Key}] = r
	}
	err := eachList(ctx, reader, s.namespaces, &paymentsv1alpha1.PaymentJobList{}, func(list client.ObjectList) {
		for _, j := range list.(*paymentsv1alpha1.PaymentJobList).Items {
			r, ok := b.finished(s, books.Charge, &j, j.Status.PaymentStatus)
			if !ok {
				continue
			}
			r.Amount, r.Currency = j.Spec.Amount, strings.ToLower(j.Spec.Currency)
			add(r)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("cannot list the PaymentJobs: %w", err)
	}
	err = eachList(ctx, reader, s.namespaces, &paymentsv1alpha1.PaymentRefundList{}, func(list client.ObjectList) {
		for _, pr := range list.(*paymentsv1alpha1.PaymentRefundList).Items {
			r, ok := b.finished(s, books.Refund, &pr, pr.Status.PaymentStatus)
			if !ok {
				continue
			}
			r.ChargeObject = pr.Namespace + "/" + pr.Spec.PaymentJobRef.Name
			if c := pr.Status.Charge; c != nil {
				r.Amount, r.Currency, r.ChargeKey, r.Charge = c.Amount, strings.ToLower(c.Currency), c.IdempotencyKey, c.ID
				r.ChargeAmount = c.Amount
			}
			if pr.Spec.Amount != nil {
				r.Amount = *pr.Spec.Amount
			}
			add(r)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("cannot list the PaymentRefunds: %w", err)
	}
	return b, nil
}

// finished is the record of obj, of kind k, whose payment is st, when the
// run reconciles it: sent under a key of the run's account, and finished
// (Completed or Failed), with its outcome's id and time. A payment of the
// account still in flight is noted in inFlight instead.
func (b *clusterBooks) finished(s scope, k books.Kind, obj client.Object, st paymentsv1alpha1.PaymentStatus) (record, bool) {
	if st.IdempotencyKey == "" || !s.ours(st.Provider, st.IdempotencyKey) {
		return record{}, false
	}
	if st.Phase != paymentsv1alpha1.PhaseCompleted && st.Phase != paymentsv1alpha1.PhaseFailed {
		b.inFlight[st.IdempotencyKey] = true
		if st.Settlement != nil && st.Settlement.SettledAt == nil {
			b.settling[st.IdempotencyKey] = true
		}
		return record{}, false
	}
	r := record{Record: books.Record{Kind: k, Key: st.IdempotencyKey, Object: obj.GetNamespace() + "/" + obj.GetName(),
		Moved: st.Phase == paymentsv1alpha1.PhaseCompleted}}
	r.ID, r.at = outcomeOf(st)
	return r, true
}

// entryRecord is the record of a ledger entry: its object named from its
// key, as no longer in the cluster (join says otherwise when it is).
func entryRecord(e ledger.Entry) record {
	kind := books.Charge
	if payment.IsRefundKey(e.Key) {
		kind = books.Refund
	}
	object := nameOfKey(e.Key)
	return record{Record: books.Record{Kind: kind, Key: e.Key, InLedger: true, Object: object, ObjectDeleted: object != "",
		Moved: e.Outcome == paymentsv1alpha1.LedgerCompleted, ID: e.Charge, Amount: e.Amount,
		Currency: strings.ToLower(e.Currency), Charge: e.RefundedCharge}, at: e.At}
}

// nameOfKey is the object a sent key names, "<namespace>/<name>": the
// key's namespace and the key the manifest gave, which is the object's
// name unless the manifest set spec.idempotencyKey. Empty for a key
// hashed for its length, or one that is no object's name.
func nameOfKey(key string) string {
	ns := payment.KeyNamespace(key)
	_, name, _ := strings.Cut(key, "/")
	if ns == "" || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return ""
	}
	return ns + "/" + name
}

// outcomeOf is the provider's id of a finished payment and the time it
// counts at: when the provider created it, or when it was recorded.
func outcomeOf(st paymentsv1alpha1.PaymentStatus) (string, time.Time) {
	var id string
	var at time.Time
	if resp := st.ProviderResponse; resp != nil {
		id = resp.ID
		if resp.Created != nil {
			at = resp.Created.Time
		}
	}
	if at.IsZero() && st.CompletedAt != nil {
		at = st.CompletedAt.Time
	}
	return id, at
}

// eachList lists every object of list's kind in the namespaces (every
// namespace when there are none) from reader, a page at a time, handing
// each page to fn.
func eachList(ctx context.Context, reader client.Reader, namespaces []string, list client.ObjectList, fn func(client.ObjectList)) error {
	if len(namespaces) == 0 {
		namespaces = []string{metav1.NamespaceAll}
	}
	for _, ns := range namespaces {
		cont := ""
		for {
			if err := reader.List(ctx, list, client.InNamespace(ns), client.Limit(listPage), client.Continue(cont)); err != nil {
				return err
			}
			fn(list)
			if cont = list.GetContinue(); cont == "" {
				break
			}
		}
	}
	return nil
}
