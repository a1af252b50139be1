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

package providercache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// recordingLooker records the keys of every lookup request and finds a
// charge for the keys in charged.
type recordingLooker struct {
	mu       sync.Mutex
	requests [][]string
	charged  map[string]bool
	err      error
}

func (l *recordingLooker) Charge(context.Context, string, payment.ChargeRequest) (payment.Outcome, error) {
	return payment.Outcome{}, errors.New("not used")
}

func (l *recordingLooker) Settle(context.Context, string, string) (payment.Outcome, error) {
	return payment.Outcome{}, errors.New("not used")
}

func (l *recordingLooker) Lookup(_ context.Context, keys []string) (map[string][]payment.Found, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requests = append(l.requests, append([]string(nil), keys...))
	if l.err != nil {
		return nil, l.err
	}
	found := map[string][]payment.Found{}
	for _, k := range keys {
		if l.charged[k] {
			found[k] = []payment.Found{{Key: k, Outcome: payment.Outcome{ID: "pi_" + k}, State: payment.StateSucceeded}}
		}
	}
	return found, nil
}

func (l *recordingLooker) sizes() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := make([]int, 0, len(l.requests))
	for _, r := range l.requests {
		n = append(n, len(r))
	}
	return n
}

func TestLookupBatcherBatchesTenKeysARequest(t *testing.T) {
	g := NewWithT(t)
	looker := &recordingLooker{charged: map[string]bool{"ns/k3": true}}
	b := newLookupBatcher(looker, nil)
	var woken atomic.Int64
	for i := range 25 {
		b.Submit(fmt.Sprintf("ns/k%d", i), types.UID(fmt.Sprint("uid-", i)), func() { woken.Add(1) })
	}
	g.Eventually(woken.Load, 5*time.Second).Should(Equal(int64(25)))
	g.Expect(looker.sizes()).To(ConsistOf(10, 10, 5), "25 keys in three requests")

	r, ok := b.Result("ns/k3", "uid-3")
	g.Expect(ok).To(BeTrue())
	g.Expect(r.Found).To(HaveLen(1))
	r, ok = b.Result("ns/k4", "uid-4")
	g.Expect(ok).To(BeTrue())
	g.Expect(r.Found).To(BeEmpty())

	// The answer belongs to the job that asked: a job created again under
	// the same key asks again.
	_, ok = b.Result("ns/k4", "uid-recreated")
	g.Expect(ok).To(BeFalse())
}

func TestLookupBatcherAsksOnceForAJobWhoseAnswerIsOnTheWay(t *testing.T) {
	g := NewWithT(t)
	looker := &recordingLooker{}
	b := newLookupBatcher(looker, nil)
	var woken atomic.Int64
	for range 5 {
		b.Submit("ns/once", "uid-1", func() { woken.Add(1) })
	}
	g.Eventually(woken.Load, 5*time.Second).Should(BeNumerically(">=", 1))
	g.Expect(looker.sizes()).To(Equal([]int{1}))
}

func TestLookupBatcherKeepsFailuresBriefly(t *testing.T) {
	g := NewWithT(t)
	looker := &recordingLooker{err: payment.Transient(errors.New("search is down"), 3*time.Second)}
	b := newLookupBatcher(looker, nil)
	now := time.Unix(1_800_000_000, 0)
	b.now = func() time.Time { return now }
	var woken atomic.Bool
	b.Submit("ns/k", "uid", func() { woken.Store(true) })
	g.Eventually(woken.Load, 5*time.Second).Should(BeTrue())

	r, ok := b.Result("ns/k", "uid")
	g.Expect(ok).To(BeTrue())
	g.Expect(r.Err).To(HaveOccurred())
	g.Expect(r.Expires).To(Equal(now.Add(3*time.Second)), "kept for the provider's Retry-After")
	now = now.Add(3 * time.Second)
	_, ok = b.Result("ns/k", "uid")
	g.Expect(ok).To(BeFalse(), "then asked again")
}

func TestSameProvider(t *testing.T) {
	id := func(uid, endpoint, account string) paymentsv1alpha1.ProviderIdentity {
		return paymentsv1alpha1.ProviderIdentity{UID: uid, Endpoint: endpoint, Account: account}
	}
	tests := []struct {
		name              string
		recorded, current paymentsv1alpha1.ProviderIdentity
		accountsOnly      bool
		want              bool
	}{
		{"same everything", id("u", "https://api.stripe.com", "acct_1"), id("u", "https://api.stripe.com", "acct_1"), true, true},
		{"stripe behind a proxy, same account", id("u", "https://api.stripe.com", "acct_1"), id("u", "https://proxy", "acct_1"), true, true},
		{"another stripe account", id("u", "https://api.stripe.com", "acct_1"), id("u", "https://api.stripe.com", "acct_2"), true, false},
		{"another object", id("u1", "https://api.stripe.com", "acct_1"), id("u2", "https://api.stripe.com", "acct_1"), true, false},
		{"http, another url", id("u", "https://a/charges", ""), id("u", "https://b/charges", ""), false, false},
		{"http, same url", id("u", "https://a/charges", ""), id("u", "https://a/charges", ""), false, true},
		{"http, another account at the same url", id("u", "https://a/charges", "acct_1"), id("u", "https://a/charges", "acct_2"), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			same, why := SameProvider(tt.recorded, tt.current, tt.accountsOnly)
			NewWithT(t).Expect(same).To(Equal(tt.want), why)
		})
	}
}
