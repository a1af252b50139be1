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
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentjob"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// re-created jobs from: their names (page-<sequence>) and their entries,
// keyed by the sent key and the fingerprint.
func TestLedgerPageIsReadBackAcrossVersions(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	scheme := runtime.NewScheme()
	g.Expect(paymentsv1alpha1.AddToScheme(scheme)).To(Succeed())
	clock := clocktesting.NewFakeClock(contractTime)

	job := contractJob("billing", "invoice-2026-0042", "")
	job.Status.Provider = &paymentsv1alpha1.ProviderIdentity{
		UID: "9d2f1c7e-0b3a-4e5f-8a6b-1c2d3e4f5a6b", Endpoint: "https://api.stripe.com", Account: "acct_1Nv0FGQ9RKHgCVdK",
	}
	paymentjob.CompletedStatus(job, payment.Outcome{ID: "pi_3Q0aZk2eZvKYlo2C1x8yT0aB", Status: "succeeded", Amount: 2000, Currency: "usd"}, false, contractTime)

	// This version writes the page.
	store := fake.NewClientBuilder().WithScheme(scheme).Build()
	stop := startLedger(ctx, ledger.New(store, store, ledger.Options{Clock: clock}), func(l *ledger.Ledger) {
		g.Expect(l.Record(ctx, paymentjob.LedgerEntry(job, contractTime))).To(Succeed())
	})
	stop()
	var pages paymentsv1alpha1.PaymentLedgerList
	g.Expect(store.List(ctx, &pages)).To(Succeed())
	g.Expect(pages.Items).To(HaveLen(1))
	g.Expect(pages.Items[0].Name).To(Equal("page-00000001"), breaksUpgrades)
	written := pages.Items[0].DeepCopy()
	written.ObjectMeta, written.TypeMeta = metav1.ObjectMeta{}, metav1.TypeMeta{}
	got, err := json.Marshal(written)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(got)).To(MatchJSON(ledgerPageJSON), breaksUpgrades)

	// The next version finds the job's outcome on a page written so, and
	// on one written before entries carried their amount.
	for _, written := range []struct {
		json   string
		amount int64
	}{{ledgerPageJSON, 2000}, {ledgerPageJSONBeforeAmounts, 0}} {
		var page paymentsv1alpha1.PaymentLedger
		g.Expect(json.Unmarshal([]byte(written.json), &page)).To(Succeed())
		page.Name = "page-00000001"
		store = fake.NewClientBuilder().WithScheme(scheme).WithObjects(&page).Build()
		recreated := contractJob("billing", "pj-7f3a", "invoice-2026-0042")
		stop = startLedger(ctx, ledger.New(store, store, ledger.Options{Clock: clock}), func(l *ledger.Ledger) {
			e, found, err := l.Find(ctx, paymentjob.ChargeOf(recreated).Key)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(found).To(BeTrue(), "a re-created job must find the outcome recorded by an earlier version")
			g.Expect(e.Fingerprint).To(Equal(paymentjob.ChargeOf(recreated).Fingerprint))
			g.Expect(e.Outcome).To(Equal(paymentsv1alpha1.LedgerCompleted))
			g.Expect(e.Charge).To(Equal("pi_3Q0aZk2eZvKYlo2C1x8yT0aB"))
			g.Expect(e.Provider).To(Equal(*job.Status.Provider))
			g.Expect(e.Amount).To(Equal(written.amount))
		})
		stop()
	}
}

// startLedger runs l, calls use once it is loaded, and returns a function
// that stops l and waits for it.
func startLedger(ctx context.Context, l *ledger.Ledger, use func(*ledger.Ledger)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { _ = l.Start(ctx) })
	use(l)
	return func() {
		cancel()
		wg.Wait()
	}
}

// newerVersionJobJSON is a Processing job as a newer manager might have
// written it, with a spec field, a status field and a condition type this
// version does not know, and another controller's finalizer.
const newerVersionJobJSON = `{
  "apiVersion": "payments.idempotency.dev/v1alpha1", "kind": "PaymentJob",
  "metadata": {"name": "invoice-2026-0042", "namespace": "billing", "finalizers": ["example.com/other"]},
  "spec": {"providerRef": {"name": "stripe"}, "amount": 2000, "currency": "usd", "futureSpecField": "kept"},
  "status": {
    "phase": "Processing",
    "idempotencyKey": "billing/invoice-2026-0042",
    "attempts": 1,
    "futureStatusField": {"note": "written by a newer version"},
    "conditions": [{"type": "FutureCondition", "status": "True", "reason": "Future", "message": "",
                    "lastTransitionTime": "2026-03-14T10:30:31Z"}]
  }
}`

// After a rollback the previous version works on objects a newer one wrote,
// its CRD still installed. This version, as that previous one, decodes them
// into its own types and so drops the fields it does not know. Its finalizer
// and label writes are merge patches of metadata alone, which cannot touch
// them; its status writes (Status().Update) send the whole status as it knows
// it, so a newer status field is erased by the first of them, while the
// conditions of types it does not know are kept.
func TestJobFieldsOfANewerVersion(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	scheme := runtime.NewScheme()
	g.Expect(paymentsv1alpha1.AddToScheme(scheme)).To(Succeed())

	// As the cache decodes the object: the same codecs as the client's.
	obj, _, err := serializer.NewCodecFactory(scheme).UniversalDeserializer().Decode([]byte(newerVersionJobJSON), nil, nil)
	g.Expect(err).NotTo(HaveOccurred(), "fields it does not know are no error")
	job := obj.(*paymentsv1alpha1.PaymentJob)
	decoded, err := json.Marshal(job)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(decoded)).NotTo(ContainSubstring("future"), "decoded into this version's types")
	g.Expect(job.Status.Conditions).To(ContainElement(HaveField("Type", "FutureCondition")))

	var mu sync.Mutex
	var patches, statuses []map[string]any
	capture := func(to *[]map[string]any, b []byte) {
		var m map[string]any
		g.Expect(json.Unmarshal(b, &m)).To(Succeed())
		mu.Lock()
		defer mu.Unlock()
		*to = append(*to, m)
	}
	store := fake.NewClientBuilder().WithScheme(scheme).
		WithStatusSubresource(&paymentsv1alpha1.PaymentJob{}).WithObjects(job.DeepCopy()).Build()
	r := &engine.Reconciler{
		Kind: paymentjob.Kind(),
		Client: interceptor.NewClient(store, interceptor.Funcs{
			Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
				b, err := patch.Data(obj)
				g.Expect(err).NotTo(HaveOccurred())
				capture(&patches, b)
				return c.Patch(ctx, obj, patch, opts...)
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				b, err := json.Marshal(obj)
				g.Expect(err).NotTo(HaveOccurred())
				capture(&statuses, b)
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
		}),
		Clock:  clocktesting.NewFakeClock(contractTime),
		Holder: contractHolder,
	}
	g.Expect(store.Get(ctx, client.ObjectKeyFromObject(job), job)).To(Succeed())

	g.Expect(r.EnsureFinalizer(ctx, job)).To(Succeed())
	g.Expect(r.WriteOutcome(ctx, job, func(j engine.Object) {
		paymentjob.CompletedStatus(j.(*paymentsv1alpha1.PaymentJob), payment.Outcome{ID: "pi_3Q0aZk2eZvKYlo2C1x8yT0aB", Status: "succeeded", Amount: 2000, Currency: "usd"}, false, contractTime)
	})).To(Succeed())
	g.Expect(r.Finish(ctx, job)).To(Succeed())

	g.Expect(patches).To(HaveLen(2), "the finalizer and the finish")
	for _, p := range patches {
		g.Expect(p).To(HaveLen(1), "a merge patch of metadata only: %v", p)
		g.Expect(p).To(HaveKey("metadata"))
		for k := range p["metadata"].(map[string]any) {
			g.Expect(k).To(BeElementOf("finalizers", "labels", "resourceVersion"))
		}
	}
	g.Expect(patches[0]["metadata"]).To(HaveKeyWithValue("finalizers", ConsistOf("example.com/other", paymentsv1alpha1.Finalizer)))
	g.Expect(patches[1]["metadata"]).To(HaveKeyWithValue("finalizers", ConsistOf("example.com/other")))
	g.Expect(patches[1]["metadata"]).To(HaveKeyWithValue("labels", HaveKeyWithValue(paymentsv1alpha1.LabelFinished, "true")))

	g.Expect(statuses).To(HaveLen(1), "the outcome")
	status := statuses[0]["status"].(map[string]any)
	g.Expect(status).NotTo(HaveKey("futureStatusField"), "the whole status as this version knows it replaces the stored one")
	g.Expect(status).To(HaveKeyWithValue("phase", "Completed"))
	conditions := status["conditions"].([]any)
	conditionTypes := make([]string, 0, len(conditions))
	for _, c := range conditions {
		conditionTypes = append(conditionTypes, c.(map[string]any)["type"].(string))
	}
	g.Expect(conditionTypes).To(ConsistOf("FutureCondition", "Ready", "Reconciling", "Stalled"), "conditions of other types are kept")
}

// newerVersionPageJSON is a ledger page as a newer manager might have
// written it, with a page field and an entry field this version does not
// know.
const newerVersionPageJSON = `{
  "apiVersion": "payments.idempotency.dev/v1alpha1", "kind": "PaymentLedger",
  "metadata": {"name": "page-00000001"},
  "futurePageField": "written by a newer version",
  "summary": {"entries": 1, "oldest": "2026-03-14T10:00:00Z", "newest": "2026-03-14T10:00:00Z"},
  "providers": [{"uid": "9d2f1c7e-0b3a-4e5f-8a6b-1c2d3e4f5a6b", "endpoint": "https://api.stripe.com"}],
  "entries": [{"key": "billing/invoice-2026-0041", "fingerprint": "sha256:00", "charge": "pi_41",
               "outcome": "Completed", "at": "2026-03-14T10:00:00Z", "futureEntryField": "written by a newer version"}]
}`

// After a rollback, the previous version appends to ledger pages a newer one
// wrote. An append rewrites the newest page whole (Update) from this
// version's decoded copy: the entries stay, the fields of the page and of its
// entries that this version does not know are lost on that page.
func TestLedgerFieldsOfANewerVersion(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	scheme := runtime.NewScheme()
	g.Expect(paymentsv1alpha1.AddToScheme(scheme)).To(Succeed())

	obj, _, err := serializer.NewCodecFactory(scheme).UniversalDeserializer().Decode([]byte(newerVersionPageJSON), nil, nil)
	g.Expect(err).NotTo(HaveOccurred(), "fields it does not know are no error")
	page := obj.(*paymentsv1alpha1.PaymentLedger)

	var mu sync.Mutex
	var updates []string
	store := fake.NewClientBuilder().WithScheme(scheme).WithObjects(page).Build()
	writer := interceptor.NewClient(store, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			b, err := json.Marshal(obj)
			if err != nil {
				return err
			}
			mu.Lock()
			updates = append(updates, string(b))
			mu.Unlock()
			return c.Update(ctx, obj, opts...)
		},
	})
	job := contractJob("billing", "invoice-2026-0042", "")
	paymentjob.CompletedStatus(job, payment.Outcome{ID: "pi_42", Status: "succeeded", Amount: 2000, Currency: "usd"}, false, contractTime)
	stop := startLedger(ctx, ledger.New(writer, store, ledger.Options{Clock: clocktesting.NewFakeClock(contractTime)}), func(l *ledger.Ledger) {
		g.Expect(l.Record(ctx, paymentjob.LedgerEntry(job, contractTime))).To(Succeed())
	})
	stop()

	g.Expect(updates).To(HaveLen(1), "one append, to the newest page")
	var written paymentsv1alpha1.PaymentLedger
	g.Expect(json.Unmarshal([]byte(updates[0]), &written)).To(Succeed())
	g.Expect(written.Name).To(Equal("page-00000001"))
	g.Expect(written.Entries).To(HaveLen(2), "the page is rewritten whole, its entries kept")
	g.Expect(written.Entries[0].Key).To(Equal("billing/invoice-2026-0041"))
	g.Expect(updates[0]).NotTo(ContainSubstring("future"), "fields this version does not know are not in the page it writes")
}
