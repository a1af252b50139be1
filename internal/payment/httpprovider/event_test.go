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

package httpprovider_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/httpprovider"
)

func TestParseEvent(t *testing.T) {
	const secret = "shared-hmac-secret"
	now := time.Unix(1700000100, 0)
	created := time.Unix(1700000000, 0)
	sign := func(b []byte) string { return httpprovider.Sign(secret, now, b) }
	succeeded := []byte(`{"id":"evt_1","type":"payment.succeeded","created":1700000000,"data":{"id":"pay_1","idempotencyKey":"ns/job"}}`)
	tests := []struct {
		name    string
		body    []byte
		header  func(body []byte) string
		want    payment.Event
		wantErr error
	}{{
		name:   "payment",
		body:   succeeded,
		header: sign,
		want:   payment.Event{ID: "evt_1", Type: "payment.succeeded", Subject: payment.SubjectPayment, ObjectID: "pay_1", Key: "ns/job", Created: created},
	}, {
		name:   "refund with an account",
		body:   []byte(`{"id":"evt_2","type":"refund.failed","created":1700000000,"account":"acct_a","data":{"id":"ref_1","idempotencyKey":"ns/r","payment":"pay_1"}}`),
		header: sign,
		want:   payment.Event{ID: "evt_2", Type: "refund.failed", Account: "acct_a", Subject: payment.SubjectRefund, ObjectID: "ref_1", Key: "ns/r", PaymentID: "pay_1", Created: created},
	}, {
		name:   "payment refunded outside the operator",
		body:   []byte(`{"id":"evt_3","type":"payment.refunded","created":1700000000,"data":{"payment":"pay_1"}}`),
		header: sign,
		want:   payment.Event{ID: "evt_3", Type: "payment.refunded", Subject: payment.SubjectRefund, PaymentID: "pay_1", Created: created},
	}, {
		name:   "dispute",
		body:   []byte(`{"id":"evt_4","type":"payment.disputed","created":1700000000,"data":{"id":"dis_1","payment":"pay_1"}}`),
		header: sign,
		want:   payment.Event{ID: "evt_4", Type: "payment.disputed", Subject: payment.SubjectDispute, ObjectID: "dis_1", PaymentID: "pay_1", Created: created},
	}, {
		name:    "unknown type is ignored",
		body:    []byte(`{"id":"evt_5","type":"customer.created","created":1700000000,"data":{"id":"c_1"}}`),
		header:  sign,
		want:    payment.Event{ID: "evt_5", Type: "customer.created", Created: created},
		wantErr: payment.ErrEventIgnored,
	}, {
		name: "rotation: the second of two v1 signatures matches",
		body: succeeded,
		header: func(b []byte) string {
			return httpprovider.Sign("old-secret", now, b) + ",v1=" + strings.SplitN(sign(b), "v1=", 2)[1]
		},
		want: payment.Event{ID: "evt_1", Type: "payment.succeeded", Subject: payment.SubjectPayment, ObjectID: "pay_1", Key: "ns/job", Created: created},
	}, {
		name:    "bad signature",
		body:    succeeded,
		header:  func(b []byte) string { return httpprovider.Sign("other-secret", now, b) },
		wantErr: payment.ErrEventBadSignature,
	}, {
		name: "timestamp changed after signing",
		body: succeeded,
		header: func(b []byte) string {
			return strings.Replace(sign(b), "t=1700000100", "t=1700000101", 1)
		},
		wantErr: payment.ErrEventBadSignature,
	}, {
		name: "stale",
		body: succeeded,
		header: func(b []byte) string {
			return httpprovider.Sign(secret, now.Add(-payment.EventTolerance-time.Second), b)
		},
		wantErr: payment.ErrEventStale,
	}, {
		name: "future",
		body: succeeded,
		header: func(b []byte) string {
			return httpprovider.Sign(secret, now.Add(payment.EventTolerance+time.Second), b)
		},
		wantErr: payment.ErrEventStale,
	}, {
		name:   "inside the tolerance",
		body:   succeeded,
		header: func(b []byte) string { return httpprovider.Sign(secret, now.Add(-payment.EventTolerance), b) },
		want:   payment.Event{ID: "evt_1", Type: "payment.succeeded", Subject: payment.SubjectPayment, ObjectID: "pay_1", Key: "ns/job", Created: created},
	}, {
		name:    "unsigned",
		body:    succeeded,
		header:  func([]byte) string { return "" },
		wantErr: payment.ErrEventUnsigned,
	}, {
		name:    "signature that is not hex",
		body:    succeeded,
		header:  func([]byte) string { return "t=1700000100,v1=zz" },
		wantErr: payment.ErrEventUnsigned,
	}, {
		name:    "malformed body",
		body:    []byte(`{"id":"evt_1","type":`),
		header:  sign,
		wantErr: payment.ErrEventMalformed,
	}, {
		name:    "payment without data.id",
		body:    []byte(`{"id":"evt_1","type":"payment.failed","data":{}}`),
		header:  sign,
		wantErr: payment.ErrEventMalformed,
	}, {
		name:    "refund without data.payment",
		body:    []byte(`{"id":"evt_1","type":"refund.succeeded","data":{"id":"ref_1"}}`),
		header:  sign,
		wantErr: payment.ErrEventMalformed,
	}, {
		name:    "oversized",
		body:    []byte(`{"id":"evt_1","type":"payment.succeeded","pad":"` + strings.Repeat("x", payment.MaxEventBytes) + `"}`),
		header:  sign,
		wantErr: payment.ErrEventTooLarge,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := httpprovider.ParseEvent(tt.body, tt.header(tt.body), secret, now)
			if tt.wantErr != nil {
				g.Expect(err).To(MatchError(tt.wantErr))
				g.Expect(err.Error()).NotTo(ContainSubstring(secret))
				g.Expect(err.Error()).NotTo(ContainSubstring("v1="))
			} else {
				g.Expect(err).NotTo(HaveOccurred())
			}
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

// TestSign pins the signature scheme that docs/providers.md describes, so
// that a service implementing it from the docs is accepted.
func TestSign(t *testing.T) {
	g := NewWithT(t)
	// HMAC-SHA256("secret", "1700000000.{}"), computed with
	// printf '1700000000.{}' | openssl dgst -sha256 -hmac secret
	g.Expect(httpprovider.Sign("secret", time.Unix(1700000000, 0), []byte("{}"))).To(Equal("t=1700000000,v1=" + testSignature))
}

const testSignature = "b8569b78799ff9e3cbff0fc2d63a33a2b57f3282abd07c37ae5e8e7d79a5f163"
