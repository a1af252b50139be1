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
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"pgregory.net/rapid"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// The world's actions beyond the API server's faults: the provider
// forgetting keys and searching late, the ledger unavailable or still
// loading, and a PaymentProvider pointed at another account or given a
// new key.

// keyMemory is how long the provider remembers an idempotency key (Stripe:
// 24 hours); forgetKeys moves the clock past it.
const keyMemory = 24 * time.Hour

// forgetKeys moves the clock past the provider's key memory and makes
// both accounts forget their keys: a request under a key sent a day ago
// is a new request. The keys no book of the operator holds (no ledger
// entry, no finished object) are the model's forgotten ones; those only a
// finished object holds, its unrecorded ones.
func (c *campaign) forgetKeys(t *rapid.T) {
	b, err := c.w.read(context.Background())
	if err != nil {
		t.Fatalf("cannot read the books: %v", err)
	}
	if c.m.providerForgot == nil {
		c.m.providerForgot = map[string]bool{}
	}
	for _, in := range b.intents {
		c.m.providerForgot[in.IdempotencyKey] = true
	}
	for _, r := range b.refunds {
		c.m.providerForgot[r.IdempotencyKey] = true
	}
	c.noteForgotten(b)
	c.w.clock.Step(keyMemory + time.Minute)
	n := c.w.sbx.ForgetKeys() + c.w.other.ForgetKeys()
	t.Logf("a day passes and the provider forgets its %d keys", n)
}

// noteForgotten classes the keys the provider forgot by the operator's
// books now: a key no book holds (no ledger entry, no finished object) is
// the model's forgotten one; one only a finished object holds, its
// unrecorded one.
func (c *campaign) noteForgotten(b books) {
	recorded, finishedHold := map[string]bool{}, map[string]bool{}
	for _, e := range b.ledger {
		recorded[e.Key] = true
	}
	for i := range b.jobs {
		if finished(b.jobs[i].Status.Phase) {
			finishedHold[b.jobs[i].Status.IdempotencyKey] = true
		}
	}
	for i := range b.refs {
		if finished(b.refs[i].Status.Phase) {
			finishedHold[b.refs[i].Status.IdempotencyKey] = true
		}
	}
	if c.m.forgotten == nil {
		c.m.forgotten, c.m.unrecorded = map[string]bool{}, map[string]bool{}
	}
	for key := range c.m.providerForgot {
		switch {
		case recorded[key]:
		case finishedHold[key]:
			c.m.unrecorded[key] = true
		default:
			c.m.forgotten[key] = true
		}
	}
}

// searchLag makes the provider's search answer what it held some time
// ago, or answer up to date again.
func (c *campaign) searchLag(t *rapid.T) {
	d := rapid.SampledFrom([]time.Duration{0, 30 * time.Second, 10 * time.Minute}).Draw(t, "lag")
	t.Logf("the provider's search lags by %s", d)
	c.w.sbx.SetSearchLag(d)
	c.w.other.SetSearchLag(d)
}

// ledgerUnavailable makes the next requests for the ledger's pages fail
// (a 503 or a timeout): the API server or etcd answering slowly.
func (c *campaign) ledgerUnavailable(t *rapid.T) {
	n := rapid.IntRange(1, 4).Draw(t, "requests")
	t.Logf("the next %d requests for the ledger's pages fail", n)
	c.w.ledgerFaults.Store(int32(n))
}

// crashLedgerLoading replaces a manager by one that reconciles while its
// ledger index cannot load yet: its next ledger operations answer
// ErrNotLoaded, as a real manager's do while the pages cannot be read.
func (c *campaign) crashLedgerLoading(t *rapid.T) {
	i := rapid.IntRange(0, len(c.w.managers)-1).Draw(t, "manager")
	n := rapid.IntRange(1, 6).Draw(t, "operations")
	t.Logf("manager %d crashes and restarts; its ledger cannot load for its next %d operations", i, n)
	if err := c.w.crash(i); err != nil {
		t.Fatalf("cannot restart manager %d: %v", i, err)
	}
	c.w.managers[i].outcomes.loading.Store(int32(n))
}

// pointAtOtherAccount points a namespace's PaymentProvider at the other
// account, or back: by its spec (secretKeyRef names the other account's
// Secret) or by its Secret (the referenced Secret now holds the other
// account's key).
func (c *campaign) pointAtOtherAccount(t *rapid.T) {
	ns := rapid.SampledFrom(namespaces).Draw(t, "namespace")
	pp := c.provider(t, ns)
	from := c.accountOf(t, pp)
	to := otherAccount
	if from == otherAccount {
		to = account
	}
	if rapid.Bool().Draw(t, "by spec") {
		name := secretName
		if to == otherAccount {
			name = otherSecretName
		}
		t.Logf("a person points PaymentProvider %s/%s from %s to %s: spec.http.secretKeyRef.name=%s", ns, providerName, from, to, name)
		if c.secretHolds(t, ns, name) != to {
			c.writeSecret(t, ns, name, to)
		}
		pp.Spec.HTTP.SecretKeyRef.Name = name
		c.updateProvider(t, pp)
		return
	}
	t.Logf("a person points PaymentProvider %s/%s from %s to %s: its Secret %s holds the other account's key",
		ns, providerName, from, to, pp.Spec.HTTP.SecretKeyRef.Name)
	c.writeSecret(t, ns, pp.Spec.HTTP.SecretKeyRef.Name, to)
}

// rotateSecret gives a namespace's PaymentProvider a new key of the same
// account in its Secret.
func (c *campaign) rotateSecret(t *rapid.T) {
	ns := rapid.SampledFrom(namespaces).Draw(t, "namespace")
	pp := c.provider(t, ns)
	acct := c.accountOf(t, pp)
	t.Logf("a person rotates the key of PaymentProvider %s/%s in its Secret %s (account %s)", ns, providerName, pp.Spec.HTTP.SecretKeyRef.Name, acct)
	c.writeSecret(t, ns, pp.Spec.HTTP.SecretKeyRef.Name, acct)
}

// provider reads namespace ns's PaymentProvider.
func (c *campaign) provider(t *rapid.T, ns string) *paymentsv1alpha1.PaymentProvider {
	pp := &paymentsv1alpha1.PaymentProvider{}
	if err := c.w.store.Get(context.Background(), objectKey(ns, providerName), pp); err != nil {
		t.Skipf("no PaymentProvider in %s: %v", ns, err)
	}
	if pp.DeletionTimestamp != nil || pp.Spec.HTTP == nil || pp.Spec.HTTP.SecretKeyRef == nil {
		t.Skipf("PaymentProvider %s/%s is being deleted", ns, providerName)
	}
	return pp
}

// accountOf is the account pp's credentials reach now.
func (c *campaign) accountOf(t *rapid.T, pp *paymentsv1alpha1.PaymentProvider) string {
	return c.secretHolds(t, pp.Namespace, pp.Spec.HTTP.SecretKeyRef.Name)
}

// secretHolds is the account of the credential in Secret ns/name.
func (c *campaign) secretHolds(t *rapid.T, ns, name string) string {
	var s corev1.Secret
	if err := c.w.store.Get(context.Background(), objectKey(ns, name), &s); err != nil {
		t.Fatalf("cannot read Secret %s/%s: %v", ns, name, err)
	}
	return accountOf(string(s.Data[secretKey]))
}

// writeSecret writes a new key of acct into Secret ns/name.
func (c *campaign) writeSecret(t *rapid.T, ns, name, acct string) {
	c.m.keys++
	if err := c.w.writeSecret(ns, name, credential(acct, c.m.keys+1)); err != nil {
		t.Fatalf("%v", err)
	}
}

// writeSecret writes cred into Secret ns/name; then every manager's
// PaymentProvider reconciler, which watches the credentials Secrets,
// refreshes the provider that names it.
func (w *world) writeSecret(ns, name, cred string) error {
	ctx := context.Background()
	var s corev1.Secret
	if err := w.store.Get(ctx, objectKey(ns, name), &s); err != nil {
		return fmt.Errorf("cannot read Secret %s/%s: %w", ns, name, err)
	}
	s.Data = map[string][]byte{secretKey: []byte(cred)}
	if err := w.store.Update(ctx, &s); err != nil {
		return fmt.Errorf("cannot write Secret %s/%s: %w", ns, name, err)
	}
	pp := &paymentsv1alpha1.PaymentProvider{}
	if err := w.store.Get(ctx, objectKey(ns, providerName), pp); err != nil || pp.Spec.HTTP.SecretKeyRef.Name != name {
		return nil
	}
	for _, m := range w.managers {
		if _, err := m.providers.Refresh(pp, cred); err != nil {
			return fmt.Errorf("cannot refresh PaymentProvider %s/%s: %w", ns, providerName, err)
		}
	}
	return nil
}

// updateProvider writes pp's new spec as a new generation, which its
// reconciler then finds Ready, as the PaymentProvider reconciler does for
// a provider whose Secret it can read.
func (c *campaign) updateProvider(t *rapid.T, pp *paymentsv1alpha1.PaymentProvider) {
	ctx := context.Background()
	// The fake API server does not count generations.
	pp.Generation++
	if err := c.w.store.Update(ctx, pp); err != nil {
		t.Fatalf("cannot update PaymentProvider %s/%s: %v", pp.Namespace, pp.Name, err)
	}
	pp.Status.ObservedGeneration = pp.Generation
	for i := range pp.Status.Conditions {
		pp.Status.Conditions[i].ObservedGeneration = pp.Generation
	}
	if err := c.w.store.Status().Update(ctx, pp); err != nil {
		t.Fatalf("cannot update the status of PaymentProvider %s/%s: %v", pp.Namespace, pp.Name, err)
	}
}

// The world's parts these actions need.

// credential is the n-th key of account acct, as its Secret holds it.
func credential(acct string, n int) string { return fmt.Sprintf("%s/sk_test_%d", acct, n) }

// accountOf is the account a credential reaches.
func accountOf(cred string) string {
	acct, _, _ := strings.Cut(cred, "/")
	return acct
}

// engineOf is the sandbox engine of account acct, or nil.
func (w *world) engineOf(acct string) *sandbox.Engine {
	switch acct {
	case account:
		return w.sbx
	case otherAccount:
		return w.other
	}
	return nil
}

// sumStats adds the counters of two accounts that the oracle reads.
func sumStats(a, b sandbox.Stats) sandbox.Stats {
	s := sandbox.Stats{Charges: a.Charges + b.Charges, Refunds: a.Refunds + b.Refunds, Faults: a.Faults + b.Faults,
		ChargesByKey: map[string]int{}, RefundsByKey: map[string]int{}}
	for _, st := range []sandbox.Stats{a, b} {
		for k, n := range st.ChargesByKey {
			s.ChargesByKey[k] += n
		}
		for k, n := range st.RefundsByKey {
			s.RefundsByKey[k] += n
		}
	}
	return s
}

// ledgerFault is the answer to a read or write of a ledger page while
// ledgerFaults are left: a 503 or a timeout, alternately; nil for any
// other request. The pages' list (a manager loading or rebuilding its
// index) never fails here: a real ledger that cannot load makes its
// callers wait ten seconds of wall time, which crashLedgerLoading's
// loadingLedger answers at once instead.
func (w *world) ledgerFault(obj runtime.Object) error {
	if _, ok := obj.(*paymentsv1alpha1.PaymentLedger); !ok {
		return nil
	}
	for {
		n := w.ledgerFaults.Load()
		if n <= 0 {
			return nil
		}
		if w.ledgerFaults.CompareAndSwap(n, n-1) {
			if n%2 == 0 {
				return apierrors.NewTimeoutError("the ledger's page did not answer in time", 1)
			}
			return apierrors.NewServiceUnavailable("etcd is unavailable")
		}
	}
}

// newSecret is the credentials Secret ns/name holding cred.
func newSecret(ns, name, cred string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{paymentsv1alpha1.LabelCredentials: "true"}},
		Data:       map[string][]byte{secretKey: []byte(cred)},
	}
}

// loadingLedger is a manager's ledger as its reconcilers see it: while
// loading is above zero, each operation answers ErrNotLoaded, as the CRD
// ledger's do while its pages cannot be read (the real one waits
// ledger.loadWait of wall time first, which a history does not). Has
// answers false then: the index holds nothing yet.
type loadingLedger struct {
	*ledger.Ledger
	loading atomic.Int32
}

// notLoaded takes one operation off loading, and reports whether the
// ledger is still loading.
func (l *loadingLedger) notLoaded() bool {
	for {
		n := l.loading.Load()
		if n <= 0 {
			return false
		}
		if l.loading.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// Find is the ledger's Find, or ErrNotLoaded while loading.
func (l *loadingLedger) Find(ctx context.Context, key string) (ledger.Entry, bool, error) {
	if l.notLoaded() {
		return ledger.Entry{}, false, ledger.ErrNotLoaded
	}
	return l.Ledger.Find(ctx, key)
}

// Has is the ledger's Has, or false while loading.
func (l *loadingLedger) Has(ctx context.Context, key string) (bool, error) {
	if l.loading.Load() > 0 {
		return false, nil
	}
	return l.Ledger.Has(ctx, key)
}

// Record is the ledger's Record, or ErrNotLoaded while loading.
func (l *loadingLedger) Record(ctx context.Context, e ledger.Entry) error {
	if l.notLoaded() {
		return ledger.ErrNotLoaded
	}
	return l.Ledger.Record(ctx, e)
}
