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
	"reflect"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/audit"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/pkg/operator"
)

// jsonPaths lists the JSON paths of the fields of t, down to the fields of
// other packages' types (times, conditions), each with the Go type it
// decodes into: "[]" marks a list, "{}" a map. A changed type is a changed
// wire format too (an integer that becomes a string no longer decodes).
func jsonPaths(prefix string, t reflect.Type) []string {
	for {
		switch t.Kind() {
		case reflect.Pointer:
			t = t.Elem()
			continue
		case reflect.Slice:
			prefix, t = prefix+"[]", t.Elem()
			continue
		case reflect.Map:
			prefix, t = prefix+"{}", t.Elem()
			continue
		}
		break
	}
	if t.Kind() != reflect.Struct || t.PkgPath() != reflect.TypeFor[paymentsv1alpha1.PaymentJob]().PkgPath() {
		return []string{prefix + " " + t.String()}
	}
	paths := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			// Inline: its fields are this struct's, at the same paths.
			paths = append(paths, jsonPaths(prefix, f.Type)...)
			continue
		}
		paths = append(paths, jsonPaths(prefix+"."+name, f.Type)...)
	}
	return paths
}

// storedFields are the JSON paths of what the operator stores and reads
// back (a PaymentJob's spec and status, a ledger page) as of this version,
// with their Go types.
var storedFields = []string{
	"paymentjob.spec.providerRef.name string",
	"paymentjob.spec.amount int64",
	"paymentjob.spec.currency string",
	"paymentjob.spec.idempotencyKey string",
	"paymentjob.spec.customer string",
	"paymentjob.spec.paymentMethod string",
	"paymentjob.spec.description string",
	"paymentjob.spec.metadata{} string",
	"paymentjob.spec.suspend bool",
	"paymentjob.spec.backoffLimit int32",
	"paymentjob.spec.activeDeadlineSeconds int64",
	"paymentjob.spec.ttlSecondsAfterFinished int32",
	"paymentjob.status.phase v1alpha1.PaymentJobPhase",
	"paymentjob.status.idempotencyKey string",
	"paymentjob.status.requestHash string",
	"paymentjob.status.attempts int32",
	"paymentjob.status.claim.holder string",
	"paymentjob.status.claim.acquiredAt v1.MicroTime",
	"paymentjob.status.claim.expiresAt v1.MicroTime",
	"paymentjob.status.provider.uid string",
	"paymentjob.status.provider.endpoint string",
	"paymentjob.status.provider.account string",
	"paymentjob.status.providerResponse.id string",
	"paymentjob.status.providerResponse.status string",
	"paymentjob.status.providerResponse.amount int64",
	"paymentjob.status.providerResponse.currency string",
	"paymentjob.status.providerResponse.created v1.Time",
	"paymentjob.status.providerResponse.replayed bool",
	"paymentjob.status.failure.reason string",
	"paymentjob.status.failure.message string",
	"paymentjob.status.startedAt v1.Time",
	"paymentjob.status.completedAt v1.Time",
	"paymentjob.status.resolution.value string",
	"paymentjob.status.resolution.at v1.Time",
	"paymentjob.status.resolution.by string",
	"paymentjob.status.resolution.verified bool",
	"paymentjob.status.observedGeneration int64",
	"paymentjob.status.conditions[] v1.Condition",
	"paymentledger.summary.entries int32",
	"paymentledger.summary.oldest v1.Time",
	"paymentledger.summary.newest v1.Time",
	"paymentledger.providers[].uid string",
	"paymentledger.providers[].endpoint string",
	"paymentledger.providers[].account string",
	"paymentledger.entries[].key string",
	"paymentledger.entries[].fingerprint string",
	"paymentledger.entries[].provider int32",
	"paymentledger.entries[].charge string",
	"paymentledger.entries[].outcome v1alpha1.LedgerOutcome",
	"paymentledger.entries[].reason string",
	"paymentledger.entries[].resolvedBy string",
	"paymentledger.entries[].at v1.Time",
}

// A field of a stored object may be added, never renamed, retyped or
// removed: the next version decodes what this one wrote into its own types,
// a field it does not know is dropped without a word, and one of another
// type fails to decode: the status, the claim, the key and the fingerprint
// of every job in flight; the entries of every ledger page.
func TestStoredFieldsAreNeverRenamedOrRemoved(t *testing.T) {
	g := NewWithT(t)

	current := slices.Concat(
		jsonPaths("paymentjob.spec", reflect.TypeFor[paymentsv1alpha1.PaymentJobSpec]()),
		jsonPaths("paymentjob.status", reflect.TypeFor[paymentsv1alpha1.PaymentJobStatus]()),
		jsonPaths("paymentledger.summary", reflect.TypeFor[paymentsv1alpha1.LedgerSummary]()),
		jsonPaths("paymentledger.providers", reflect.TypeFor[[]paymentsv1alpha1.ProviderIdentity]()),
		jsonPaths("paymentledger.entries", reflect.TypeFor[[]paymentsv1alpha1.LedgerEntry]()),
	)
	for _, f := range storedFields {
		g.Expect(current).To(ContainElement(f), "%s was renamed, retyped or removed; it is %s", f, breaksUpgrades)
	}
}

// The names another version of the manager, the admission policies, the
// providers or people's tooling find the operator's objects by. Each row
// says what a rename breaks; a new name needs a migration that keeps
// reading the old one.
func TestWireNamesAreStable(t *testing.T) {
	jobsSelector, secretsSelector := "", ""
	for obj, by := range operator.CacheOptions().ByObject {
		switch obj.(type) {
		case *paymentsv1alpha1.PaymentJob:
			jobsSelector = by.Label.String()
		case *corev1.Secret:
			secretsSelector = by.Label.String()
		}
	}
	tests := []struct {
		name, got, want, breaks string
	}{
		{"API group and version", paymentsv1alpha1.GroupVersion.String(), "payments.idempotency.dev/v1alpha1",
			"every stored object"},
		{"PaymentJob finalizer", paymentsv1alpha1.Finalizer, "payments.idempotency.dev/outcome-guard",
			"jobs in flight keep a finalizer the new manager never removes, so their deletion hangs; the outcome-guard-at-create policy sets it"},
		{"PaymentProvider finalizer", paymentsv1alpha1.ProviderFinalizer, "payments.idempotency.dev/in-use",
			"providers with jobs in flight keep a finalizer the new manager never removes"},
		{"finished label", paymentsv1alpha1.LabelFinished, "payments.idempotency.dev/finished",
			"every finished job comes back into the manager's cache; the finished-label policy and the audit look for it"},
		{"cache selector of PaymentJobs", jobsSelector, "!payments.idempotency.dev/finished",
			"the manager's memory: finished jobs must stay out of its cache"},
		{"credentials label", paymentsv1alpha1.LabelCredentials, "payments.idempotency.dev/credentials",
			"the manager no longer sees the Secrets of existing PaymentProviders: none is Ready, no job is charged"},
		{"cache selector of Secrets", secretsSelector, "payments.idempotency.dev/credentials=true",
			"the manager no longer sees the Secrets of existing PaymentProviders"},
		{"resolve annotation", paymentsv1alpha1.AnnotationResolve, "payments.idempotency.dev/resolve",
			"runbooks, and resolutions set before the upgrade"},
		{"resolved-by annotation", paymentsv1alpha1.AnnotationResolvedBy, "payments.idempotency.dev/resolved-by",
			"the resolve-attribution policy sets it, the manager reads it"},
		{"leader election Lease", operator.LeaderElectionID, "paymentjob-operator.payments.idempotency.dev",
			"managers of two versions would both lead during a rolling upgrade: claims keep it safe, at the cost of conflicts"},
		{"admission policy label", audit.AdmissionPolicyLabel, "payments.idempotency.dev/admission-policy",
			"the audit no longer finds the installed policies and reports them missing"},
		{"Stripe metadata: idempotency key", payment.MetadataKeyIdempotencyKey, "paymentjob_idempotency_key",
			"lookups no longer find charges made by earlier versions: a re-created manifest whose ledger entry is gone is charged again"},
		{"Stripe metadata: request fingerprint", payment.MetadataKeyFingerprint, "paymentjob_request_fingerprint",
			"charges made by earlier versions look fingerprint-less to lookups, matched by amount and currency alone"},
		{"condition Ready", paymentsv1alpha1.ConditionReady, "Ready",
			"the manager reads its reason back (FoundInLedger, waits); kubectl wait, Flux and Argo CD read it"},
		{"condition Reconciling", paymentsv1alpha1.ConditionReconciling, "Reconciling", "kstatus readers"},
		{"condition Stalled", paymentsv1alpha1.ConditionStalled, "Stalled",
			"a resolution is honoured only on Stalled=True; kstatus readers"},
		{"reason FoundInLedger", paymentsv1alpha1.ReasonFoundInLedger, "FoundInLedger",
			"a job finished from the ledger is told apart from one charged in its own lifetime by it"},
		{"phase Pending", string(paymentsv1alpha1.PhasePending), "Pending", "the CRD's enum and the state machine"},
		{"phase Processing", string(paymentsv1alpha1.PhaseProcessing), "Processing",
			"the CRD's enum; a job in flight whose phase the new manager does not know is treated as new"},
		{"phase Completed", string(paymentsv1alpha1.PhaseCompleted), "Completed",
			"the CRD's enum; a finished job whose phase the new manager does not know is treated as new"},
		{"phase Failed", string(paymentsv1alpha1.PhaseFailed), "Failed",
			"the CRD's enum; a finished job whose phase the new manager does not know is treated as new"},
		{"ledger outcome Completed", string(paymentsv1alpha1.LedgerCompleted), "Completed",
			"the CRD's enum; re-created jobs are finished from entries by it"},
		{"ledger outcome Failed", string(paymentsv1alpha1.LedgerFailed), "Failed",
			"the CRD's enum; re-created jobs are finished from entries by it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tt.got).To(Equal(tt.want), "renaming the %s breaks: %s. It is %s", tt.name, tt.breaks, breaksUpgrades)
		})
	}
}

// ledgerPageJSON is the first ledger page as this version writes it for
// the Completed contract job, without its metadata.
const ledgerPageJSON = `{
  "metadata": {},
  "summary": {"entries": 1, "oldest": "2026-03-14T10:30:31Z", "newest": "2026-03-14T10:30:31Z"},
  "providers": [{"uid": "9d2f1c7e-0b3a-4e5f-8a6b-1c2d3e4f5a6b", "endpoint": "https://api.stripe.com", "account": "acct_1Nv0FGQ9RKHgCVdK"}],
  "entries": [{
    "key": "billing/invoice-2026-0042",
    "fingerprint": "sha256:f37e7d6fae213f0e2daed6be7632696a807a16eae156e971f759a4fd4b209c4e",
    "charge": "pi_3Q0aZk2eZvKYlo2C1x8yT0aB",
    "amount": 2000,
    "currency": "usd",
    "outcome": "Completed",
    "at": "2026-03-14T10:30:31Z"
  }]
}`

// ledgerPageJSONBeforeAmounts is the same page as the versions before
// reconciliation wrote it, without the entry's amount and currency: a
// newer manager reads it (the amount is then unknown, never compared).
const ledgerPageJSONBeforeAmounts = `{
  "metadata": {},
  "summary": {"entries": 1, "oldest": "2026-03-14T10:30:31Z", "newest": "2026-03-14T10:30:31Z"},
  "providers": [{"uid": "9d2f1c7e-0b3a-4e5f-8a6b-1c2d3e4f5a6b", "endpoint": "https://api.stripe.com", "account": "acct_1Nv0FGQ9RKHgCVdK"}],
  "entries": [{
    "key": "billing/invoice-2026-0042",
    "fingerprint": "sha256:f37e7d6fae213f0e2daed6be7632696a807a16eae156e971f759a4fd4b209c4e",
    "charge": "pi_3Q0aZk2eZvKYlo2C1x8yT0aB",
    "outcome": "Completed",
    "at": "2026-03-14T10:30:31Z"
  }]
}`
