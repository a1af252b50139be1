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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// The model: what the campaign knows the world should be. It holds every
// manifest a user ever applied (GitOps keeps them after a prune), and from
// them which requests may have moved money under which key; the oracle
// (oracle_test.go) compares it with the three books.

// The names of the world.
const (
	providerName = "pay"
	account      = "acct_campaign"
	// otherAccount is the second account at the provider, which a
	// PaymentProvider's spec or Secret may be pointed at.
	otherAccount = "acct_other"
	endpoint     = "https://sandbox.campaign.invalid"
	currency     = "usd"
)

// The kinds of objects the campaign makes.
const (
	kindJob    = "PaymentJob"
	kindRefund = "PaymentRefund"
)

// jobManifest is a PaymentJob as a user applied it.
type jobManifest struct {
	ns, name string
	// key is spec.idempotencyKey, empty for the name.
	key    string
	amount int64
	// suspend is spec.suspend: the job waits for a person's approval.
	suspend bool
	// scope is the key scope of its namespace's PaymentProvider
	// (spec.keyScope), which the key it sends carries.
	scope string
	// ttl is spec.ttlSecondsAfterFinished, nil to keep the job.
	ttl *int32
}

// sentKey is the key the job sends to the provider.
func (j jobManifest) sentKey() string {
	k := j.key
	if k == "" {
		k = j.name
	}
	return payment.ScopedKey(j.scope, j.ns, k)
}

// object is the PaymentJob of the manifest.
func (j jobManifest) object() *paymentsv1alpha1.PaymentJob {
	return &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: j.name, Namespace: j.ns},
		Spec: paymentsv1alpha1.PaymentJobSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: providerName},
			Amount: j.amount, Currency: currency, PaymentMethod: "pm_card_visa", IdempotencyKey: j.key,
			Description: "campaign", BackoffLimit: ptr.To[int32](6), Suspend: ptr.To(j.suspend),
			TTLSecondsAfterFinished: j.ttl},
	}
}

// refundManifest is a PaymentRefund as a user applied it.
type refundManifest struct {
	ns, name, job string
	// amount is spec.amount, nil for the whole charge.
	amount *int64
}

// object is the PaymentRefund of the manifest.
func (r refundManifest) object() *paymentsv1alpha1.PaymentRefund {
	return &paymentsv1alpha1.PaymentRefund{
		ObjectMeta: metav1.ObjectMeta{Name: r.name, Namespace: r.ns},
		Spec: paymentsv1alpha1.PaymentRefundSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: providerName},
			PaymentJobRef: paymentsv1alpha1.PaymentJobReference{Name: r.job}, Amount: r.amount,
			Reason: paymentsv1alpha1.RefundRequestedByCustomer, BackoffLimit: ptr.To[int32](6)},
	}
}

// model is what the campaign knows.
type model struct {
	jobs    []jobManifest
	refunds []refundManifest
	// dashboard counts the refunds made at the provider behind the
	// operator's back, to key them.
	dashboard int
	// behind is the rest of what was done at the provider behind the
	// operator's back (actions_money_test.go).
	behind behind
	// keys counts the credentials written into Secrets after the first,
	// to number them.
	keys int
	// forgotten are the keys the provider forgot while the ledger held no
	// outcome under them: nothing remembers those payments, and another
	// object sending the key again is charged again, as docs/providers.md
	// (Key retention) says (the campaign's providers never look a key up
	// before a first charge).
	forgotten map[string]bool
	// unrecorded are the keys the provider forgot while only a finished
	// object held their outcome (the ledger had not recorded it yet):
	// another manifest sending the key is charged again, for a new object
	// looks in the ledger only.
	unrecorded map[string]bool
	// providerForgot are the keys the provider forgot (forgetKeys), charges'
	// and refunds': an etcd restore that takes their outcome out of the
	// books makes them forgotten or unrecorded.
	providerForgot map[string]bool
	// restoredAway are the keys charged or refunded at the provider that
	// no book held right after an etcd restore (etcdRestore).
	restoredAway map[string]bool
	// restoredRefunds are the refunds at the provider, by id, whose key
	// no book held right after an etcd restore: money the restored
	// cluster does not know it moved (oracle_restore_test.go).
	restoredRefunds map[string]bool
	// unverified are the keys of the objects a manager finished on a
	// person's resolution the provider could not check (status.resolution
	// verified: false): the ledger's entry under such a key may be that
	// word, and it does not say so (oracle_final_test.go notes them as
	// they are written).
	unverified map[string]bool
}

// manifestsSending are the job manifests that send key.
func (m *model) manifestsSending(key string) []jobManifest {
	var found []jobManifest
	for _, j := range m.jobs {
		if j.sentKey() == key {
			found = append(found, j)
		}
	}
	return found
}

// sharedKey reports whether key is sent by manifests asking for different
// requests (another amount, or another name under the same key): their
// outcomes are then not each one's own.
func (m *model) sharedKey(key string) bool {
	names := map[string]bool{}
	for _, j := range m.manifestsSending(key) {
		names[j.ns+"/"+j.name] = true
	}
	// A key someone else charged under is shared with them. So is a key
	// whose charge an etcd restore took out of the books: the restored
	// cluster knows nothing of it, as of another system's, and its
	// manifest applied again is charged again where its PaymentProvider
	// reaches now, if that is another account (the provider's key memory
	// is per account): docs/reliability.md, "Another account is another
	// payment, unless the ledger says otherwise".
	return len(names) > 1 || m.behind.chargedOutside(key) || m.restoredAway[key]
}

// jobOf is the manifest of the job ns/name.
func (m *model) jobOf(ns, name string) jobManifest {
	for _, j := range m.jobs {
		if j.ns == ns && j.name == name {
			return j
		}
	}
	panic(fmt.Sprintf("no manifest of job %s/%s", ns, name))
}

// behind is what people and systems other than the operator did at the
// provider in one history.
type behind struct {
	// outside maps the id of each charge someone else made under one of
	// our keys to that key.
	outside map[string]string
	// disputes maps each dispute's id to the charge it disputes.
	disputes map[string]string
	// failed are the refunds the provider failed after they succeeded.
	failed map[string]bool
}

// chargedOutside reports whether someone else charged key.
func (b *behind) chargedOutside(key string) bool {
	for _, k := range b.outside {
		if k == key {
			return true
		}
	}
	return false
}
