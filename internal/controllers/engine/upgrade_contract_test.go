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

package engine_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentjob"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
)

// The upgrade contract: what one version of the manager writes and the next
// one (or, after a rollback, the previous one) reads back. A job in flight at
// an upgrade carries a claim, a key, a fingerprint and a provider identity
// written by the older manager; a manifest applied again after its job was
// deleted is matched to its payment by the key it derives, in the ledger and
// at the provider. None of this needs an API server.
//
// The expected values were computed once by this code and written down by
// hand. A failure here is a change that breaks upgrades, not a golden file to
// regenerate: see "Upgrades and rollbacks" in docs/operations.md.

// breaksUpgrades is the failure message of the tests of the upgrade contract.
const breaksUpgrades = "part of the upgrade contract: a manager of another version reads what this one wrote " +
	"(docs/operations.md#upgrades-and-rollbacks); changing it breaks upgrades and rollbacks"

// contractTime is when the contract's jobs are claimed: with nanoseconds, to
// show what the wire keeps of them.
var contractTime = time.Date(2026, 3, 14, 10, 30, 31, 123456789, time.UTC)

// contractJob is a PaymentJob with every request field set.
func contractJob(namespace, name, specKey string) *paymentsv1alpha1.PaymentJob {
	return &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("4b0f6b1e-5a2c-4d0e-9f1a-7c3e2d1b0a99"), Generation: 1},
		Spec: paymentsv1alpha1.PaymentJobSpec{
			ProviderRef:    paymentsv1alpha1.ProviderReference{Name: "stripe"},
			Amount:         2000,
			Currency:       "usd",
			IdempotencyKey: specKey,
			Customer:       "cus_123",
			PaymentMethod:  "pm_card_visa",
			Description:    "March invoice",
			Metadata:       map[string]string{"invoice": "42"},
		},
	}
}

// The job-level derivation: the namespace and spec.idempotencyKey, or the
// name, give the key sent to the provider and recorded in
// status.idempotencyKey and the ledger; the key and the spec give the
// fingerprint recorded in status.requestHash, the ledger and the provider's
// metadata. A different key is a second charge for every manifest applied
// again after its job was deleted; a different fingerprint stalls every job
// in flight (RequestChanged) and every re-created one (ChargeMismatch).
func TestJobKeyAndFingerprintGoldenValues(t *testing.T) {
	tests := []struct {
		name                     string
		namespace, job, key      string
		wantKey, wantRequestHash string
	}{
		{
			// The sha256 of {"v":"1","key":"billing/invoice-2026-0042","request":{"amount":2000,"currency":"usd",
			// "customer":"cus_123","paymentMethod":"pm_card_visa","description":"March invoice","metadata":{"invoice":"42"}}}
			name: "the job's name when spec.idempotencyKey is empty", namespace: "billing", job: "invoice-2026-0042",
			wantKey:         "billing/invoice-2026-0042",
			wantRequestHash: "sha256:f37e7d6fae213f0e2daed6be7632696a807a16eae156e971f759a4fd4b209c4e",
		},
		{
			// The same key and request as the row above: one payment.
			name: "spec.idempotencyKey wins over the name", namespace: "billing", job: "pj-7f3a", key: "invoice-2026-0042",
			wantKey:         "billing/invoice-2026-0042",
			wantRequestHash: "sha256:f37e7d6fae213f0e2daed6be7632696a807a16eae156e971f759a4fd4b209c4e",
		},
		{
			name: "the same key in another namespace", namespace: "team-a", job: "invoice-2026-0042",
			wantKey:         "team-a/invoice-2026-0042",
			wantRequestHash: "sha256:e96c3b3eefb8959e28a625e35253d45b34e9ce5476236a2809d6dd095fa2fb15",
		},
		{
			name: "every character spec.idempotencyKey allows", namespace: "billing", job: "pj-1", key: "ERP.2026:inv/42-A",
			wantKey:         "billing/ERP.2026:inv/42-A",
			wantRequestHash: "sha256:35d9f08640d28c8122620998b59c6eb207ca2d35b705b54adba69b69ae2d85d3",
		},
		{
			name: "scoped key of exactly 255 bytes: verbatim", namespace: "billing", job: strings.Repeat("a", 247),
			wantKey:         "billing/" + strings.Repeat("a", 247),
			wantRequestHash: "sha256:43201f4215c70f586fb02b464f98b75747e212d5618690c9a16afef75ab9bd85",
		},
		{
			name: "the longest name: hashed", namespace: "billing", job: strings.Repeat("a", 253),
			wantKey:         "billing/sha256:7180abf25fab58eff1f12f3a7ce1354f1ca039f7aa8bc1e3165c61e4dcdb0109",
			wantRequestHash: "sha256:a9bd90bf6942aeef1a177631469ffaaeaa8c3e5abc9806bfb2cb89c3cc71def9",
		},
		{
			name: "the longest spec key in the longest namespace: hashed", namespace: strings.Repeat("n", 63), job: "pj-1",
			key:             strings.Repeat("K", 200),
			wantKey:         strings.Repeat("n", 63) + "/sha256:956928c699566902e6d127f894e4a574f650ffd5ee1b8ce92d062875415a5244",
			wantRequestHash: "sha256:519d73e4d13a7588e24e6dcf736e305460d141c6fdbb92a4c1f6078eadb5e2e2",
		},
		{
			name: "spec key that looks hashed: hashed", namespace: "billing", job: "pj-1", key: "sha256:invoice-42",
			wantKey:         "billing/sha256:0c1b0e850e46cad77919a91ccd9e1aa5d24bec5d2af257b147d7898ff67c4fce",
			wantRequestHash: "sha256:4c9f0409c86bb99d0a050dfa9dddc365e246c68f6514faf727f2389ec8c04de0",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			job := contractJob(tt.namespace, tt.job, tt.key)

			c := paymentjob.ChargeOf(job)
			g.Expect(c.Key).To(Equal(tt.wantKey), breaksUpgrades)
			g.Expect(c.Fingerprint).To(Equal(tt.wantRequestHash), breaksUpgrades)
			// The ledger is keyed the same way, so a re-created job finds it.
			e := paymentjob.LedgerEntry(job, contractTime)
			g.Expect(e.Key).To(Equal(tt.wantKey), breaksUpgrades)
			g.Expect(e.Fingerprint).To(Equal(tt.wantRequestHash), breaksUpgrades)
		})
	}
}

// The endpoint recorded in status.provider and in the ledger's providers. A
// different one for the same PaymentProvider stops every job in flight
// through an HTTP provider (and through a Stripe one whose account was not
// recorded) with ProviderChanged.
func TestProviderEndpointGoldenValues(t *testing.T) {
	ref := paymentsv1alpha1.SecretKeyReference{Name: "credentials", Key: "apiKey"}
	tests := []struct {
		name string
		spec paymentsv1alpha1.PaymentProviderSpec
		want string
	}{
		{
			name: "Stripe without apiBase",
			spec: paymentsv1alpha1.PaymentProviderSpec{Stripe: &paymentsv1alpha1.StripeProvider{SecretKeyRef: ref}},
			want: "https://api.stripe.com",
		},
		{
			name: "Stripe apiBase without its trailing slash",
			spec: paymentsv1alpha1.PaymentProviderSpec{Stripe: &paymentsv1alpha1.StripeProvider{APIBase: "http://127.0.0.1:12111/", SecretKeyRef: ref}},
			want: "http://127.0.0.1:12111",
		},
		{
			name: "HTTP url verbatim, not its lookupURL",
			spec: paymentsv1alpha1.PaymentProviderSpec{HTTP: &paymentsv1alpha1.HTTPProvider{
				URL: "https://payments.internal/charges/", LookupURL: "https://payments.internal/lookup"}},
			want: "https://payments.internal/charges/",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(endpointOf(tt.spec)).To(Equal(tt.want), breaksUpgrades)
		})
	}
}

// endpointOf is the endpoint a PaymentProvider of spec is recorded with:
// its identity, as the provider cache resolves it for the engine.
func endpointOf(spec paymentsv1alpha1.PaymentProviderSpec) string {
	cache := &providercache.ProviderCache{Build: func(paymentsv1alpha1.PaymentProviderSpec, string) (payment.Provider, error) {
		return chargeFunc(nil), nil
	}}
	resolved, err := cache.Refresh(&paymentsv1alpha1.PaymentProvider{ObjectMeta: metav1.ObjectMeta{UID: "contract"}, Spec: spec}, "sk_test_contract")
	if err != nil {
		return "cannot resolve: " + err.Error()
	}
	id, err := resolved.Identity(context.Background())
	if err != nil {
		return "no identity: " + err.Error()
	}
	return id.Endpoint
}

// contractHolder is a claim holder as the previous manager wrote it.
const contractHolder = "paymentjob-operator-controller-manager-7c9d5f6b8-x4k2p/3fa2c1d0"

// claimedStatusJSON is the status fields the manager reads back of a
// Processing job, as a claim write sets them (with the provider identity and
// a charge to settle).
const claimedStatusJSON = `{
  "phase": "Processing",
  "idempotencyKey": "billing/invoice-2026-0042",
  "requestHash": "sha256:f37e7d6fae213f0e2daed6be7632696a807a16eae156e971f759a4fd4b209c4e",
  "attempts": 1,
  "claim": {
    "holder": "paymentjob-operator-controller-manager-7c9d5f6b8-x4k2p/3fa2c1d0",
    "acquiredAt": "2026-03-14T10:30:31.123456Z",
    "expiresAt": "2026-03-14T10:31:31.123456Z"
  },
  "provider": {"uid": "9d2f1c7e-0b3a-4e5f-8a6b-1c2d3e4f5a6b", "endpoint": "https://api.stripe.com", "account": "acct_1Nv0FGQ9RKHgCVdK"},
  "providerResponse": {"id": "pi_3Q0aZk2eZvKYlo2C1x8yT0aB", "status": "processing"},
  "startedAt": "2026-03-14T10:30:31Z"
}`

// A claim written by one version is read by the next: the claim's holder
// and times, the key, the fingerprint and the provider identity. The new
// manager waits for the old one's claim to expire, then takes it over with
// the same key and fingerprint, and stops nothing.
func TestClaimIsReadBackAcrossVersions(t *testing.T) {
	g := NewWithT(t)

	job := contractJob("billing", "invoice-2026-0042", "")
	job.Status.Provider = &paymentsv1alpha1.ProviderIdentity{
		UID: "9d2f1c7e-0b3a-4e5f-8a6b-1c2d3e4f5a6b", Endpoint: "https://api.stripe.com", Account: "acct_1Nv0FGQ9RKHgCVdK",
	}
	job.Status.ProviderResponse = engine.ResponseOf(payment.Outcome{ID: "pi_3Q0aZk2eZvKYlo2C1x8yT0aB", Status: "processing"})
	paymentjob.ClaimStatus(job, paymentjob.ChargeOf(job), contractHolder, contractTime, time.Minute, paymentsv1alpha1.ReasonClaimed)

	written, err := json.Marshal(job.Status)
	g.Expect(err).NotTo(HaveOccurred())
	var all map[string]json.RawMessage
	g.Expect(json.Unmarshal(written, &all)).To(Succeed())
	readBack := map[string]json.RawMessage{}
	for _, f := range []string{"phase", "idempotencyKey", "requestHash", "attempts", "claim", "provider", "providerResponse", "startedAt"} {
		readBack[f] = all[f]
	}
	got, err := json.Marshal(readBack)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(got)).To(MatchJSON(claimedStatusJSON), breaksUpgrades)

	// What a manager of the next version makes of it.
	before := contractJob("billing", "invoice-2026-0042", "")
	g.Expect(json.Unmarshal([]byte(claimedStatusJSON), &before.Status)).To(Succeed())
	g.Expect((&engine.Reconciler{Kind: paymentjob.Kind()}).CheckRecordedKey(before)).To(BeNil(), "the recorded key is the derived one: no KeyMismatch")
	g.Expect(before.Status.RequestHash).To(Equal(paymentjob.ChargeOf(before).Fingerprint), "no RequestChanged")
	g.Expect(before.Status.Claim.ExpiresAt.Time).To(BeTemporally("==", contractTime.Add(time.Minute).Truncate(time.Microsecond)))

	next := &engine.Reconciler{Kind: paymentjob.Kind(), Holder: "paymentjob-operator-controller-manager-5d8f9c7b4-q2w3e/9b1c2d3e", Backoff: engine.DefaultBackoff}
	reason, notBefore := next.NextClaim(before)
	g.Expect(reason).To(Equal(paymentsv1alpha1.ReasonClaimTakenOver), "another process's claim is taken over, never treated as its own")
	g.Expect(notBefore).To(BeTemporally("==", before.Status.Claim.ExpiresAt.Time), "not before the old claim expires")
}

// chargeFunc is a payment.Provider written as a function.
type chargeFunc func(ctx context.Context, key string, req payment.ChargeRequest) (payment.Outcome, error)

func (f chargeFunc) Charge(ctx context.Context, key string, req payment.ChargeRequest) (payment.Outcome, error) {
	return f(ctx, key, req)
}

// A Processing job without status.provider: claimed by a version that did
// not record it, or written since by an older manager that erased it after a
// rollback (TestJobFieldsOfANewerVersion). Once its claim has expired this
// version takes it over with the same key and request, and records the
// provider identity it charges through in that claim.
func TestTakeoverOfAJobWithoutItsProviderRecord(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	scheme := runtime.NewScheme()
	g.Expect(paymentsv1alpha1.AddToScheme(scheme)).To(Succeed())

	job := contractJob("billing", "invoice-2026-0042", "")
	job.Finalizers = []string{paymentsv1alpha1.Finalizer}
	paymentjob.ClaimStatus(job, paymentjob.ChargeOf(job), contractHolder, contractTime, time.Minute, paymentsv1alpha1.ReasonClaimed)
	g.Expect(job.Status.Provider).To(BeNil())
	store := fake.NewClientBuilder().WithScheme(scheme).
		WithStatusSubresource(&paymentsv1alpha1.PaymentJob{}).WithObjects(job).Build()
	g.Expect(store.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())

	var keys []string
	provider := chargeFunc(func(_ context.Context, key string, req payment.ChargeRequest) (payment.Outcome, error) {
		keys = append(keys, key)
		g.Expect(req).To(Equal(paymentjob.ChargeOf(job).Request), "the same request")
		return payment.Outcome{ID: "pi_3Q0aZk2eZvKYlo2C1x8yT0aB", Status: "succeeded", Amount: 2000, Currency: "usd", Replayed: true}, nil
	})
	clock := clocktesting.NewFakeClock(contractTime.Add(2 * time.Minute))
	r := &engine.Reconciler{Kind: paymentjob.Kind(), Client: store, Recorder: events.NewFakeRecorder(10), Clock: clock,
		Holder: "paymentjob-operator-controller-manager-5d8f9c7b4-q2w3e/9b1c2d3e", ClaimLease: time.Minute, Backoff: engine.DefaultBackoff}
	reason, notBefore := r.NextClaim(job)
	g.Expect(reason).To(Equal(paymentsv1alpha1.ReasonClaimTakenOver))
	g.Expect(clock.Now()).To(BeTemporally(">", notBefore), "the old claim has expired")

	id := paymentsv1alpha1.ProviderIdentity{
		UID: "9d2f1c7e-0b3a-4e5f-8a6b-1c2d3e4f5a6b", Endpoint: "https://api.stripe.com", Account: "acct_1Nv0FGQ9RKHgCVdK",
	}
	_, err := r.ClaimAndAct(ctx, job, &engine.Target{Resolved: providercache.Resolved{Provider: provider}, ID: id, Timeout: time.Second},
		reason, payment.Verdict{Action: payment.ActionCharge})
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(keys).To(Equal([]string{"billing/invoice-2026-0042"}), "one call, with the key of the first claim")
	var after paymentsv1alpha1.PaymentJob
	g.Expect(store.Get(ctx, client.ObjectKeyFromObject(job), &after)).To(Succeed())
	g.Expect(after.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted))
	g.Expect(after.Status.Attempts).To(Equal(int32(2)))
	g.Expect(after.Status.Provider).To(Equal(&id), "recorded at the takeover")
	g.Expect(after.Status.ProviderResponse.Replayed).To(BeTrue())
}
