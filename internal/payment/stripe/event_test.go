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

package stripe

import (
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/stripe/stripe-go/v85/webhook"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

const testWebhookSecret = "whsec_test_secret"

// stripeEvent is a Stripe event body of typ about object.
func stripeEvent(typ, object string) []byte {
	return []byte(fmt.Sprintf(`{"id":"evt_1","object":"event","api_version":"2019-01-01","type":%q,"created":1700000000,"livemode":false,"data":{"object":%s}}`, typ, object))
}

// stripeSign is the Stripe-Signature header of body signed with secret at t.
func stripeSign(secret string, t time.Time, body []byte) string {
	return fmt.Sprintf("t=%d,v1=%s", t.Unix(), hex.EncodeToString(webhook.ComputeSignature(t, body, secret)))
}

func TestParseEvent(t *testing.T) {
	now := time.Unix(1700000100, 0)
	intent := stripeEvent("payment_intent.succeeded", `{"id":"pi_1","object":"payment_intent","metadata":{"paymentjob_idempotency_key":"ns/job"}}`)
	tests := []struct {
		name    string
		body    []byte
		header  func(body []byte) string
		want    payment.Event
		wantErr error
	}{{
		name:   "payment intent",
		body:   intent,
		header: func(b []byte) string { return stripeSign(testWebhookSecret, now, b) },
		want:   payment.Event{ID: "evt_1", Type: "payment_intent.succeeded", Subject: payment.SubjectPayment, ObjectID: "pi_1", Key: "ns/job"},
	}, {
		name:   "connect account and an API version stripe-go does not know",
		body:   []byte(`{"id":"evt_2","object":"event","api_version":"2099-01-01.future","account":"acct_9","type":"payment_intent.processing","created":1700000000,"livemode":true,"data":{"object":{"id":"pi_2"}}}`),
		header: func(b []byte) string { return stripeSign(testWebhookSecret, now, b) },
		want:   payment.Event{ID: "evt_2", Type: "payment_intent.processing", Account: "acct_9", Subject: payment.SubjectPayment, ObjectID: "pi_2"},
	}, {
		name:   "refund",
		body:   stripeEvent("refund.updated", `{"id":"re_1","object":"refund","payment_intent":"pi_1","metadata":{"paymentjob_idempotency_key":"ns/refund"}}`),
		header: func(b []byte) string { return stripeSign(testWebhookSecret, now, b) },
		want:   payment.Event{ID: "evt_1", Type: "refund.updated", Subject: payment.SubjectRefund, ObjectID: "re_1", Key: "ns/refund", PaymentID: "pi_1"},
	}, {
		name:   "charge refunded names its payment intent",
		body:   stripeEvent("charge.refunded", `{"id":"ch_1","object":"charge","payment_intent":"pi_1"}`),
		header: func(b []byte) string { return stripeSign(testWebhookSecret, now, b) },
		want:   payment.Event{ID: "evt_1", Type: "charge.refunded", Subject: payment.SubjectRefund, PaymentID: "pi_1"},
	}, {
		name:   "dispute",
		body:   stripeEvent("charge.dispute.created", `{"id":"dp_1","object":"dispute","payment_intent":{"id":"pi_1"}}`),
		header: func(b []byte) string { return stripeSign(testWebhookSecret, now, b) },
		want:   payment.Event{ID: "evt_1", Type: "charge.dispute.created", Subject: payment.SubjectDispute, ObjectID: "dp_1", PaymentID: "pi_1"},
	}, {
		name:    "other types are ignored",
		body:    stripeEvent("customer.created", `{"id":"cus_1"}`),
		header:  func(b []byte) string { return stripeSign(testWebhookSecret, now, b) },
		want:    payment.Event{ID: "evt_1", Type: "customer.created"},
		wantErr: payment.ErrEventIgnored,
	}, {
		name: "rotated secret: one of two v1 signatures matches",
		body: intent,
		header: func(b []byte) string {
			return stripeSign("whsec_old", now, b) + ",v1=" + strings.Split(stripeSign(testWebhookSecret, now, b), "v1=")[1]
		},
		want:    payment.Event{ID: "evt_1", Type: "payment_intent.succeeded", Subject: payment.SubjectPayment, ObjectID: "pi_1", Key: "ns/job"},
		wantErr: nil,
	}, {
		name:    "bad signature",
		body:    intent,
		header:  func(b []byte) string { return stripeSign("whsec_other", now, b) },
		wantErr: payment.ErrEventBadSignature,
	}, {
		name:    "body changed after signing",
		body:    intent,
		header:  func(b []byte) string { return stripeSign(testWebhookSecret, now, append([]byte(" "), b...)) },
		wantErr: payment.ErrEventBadSignature,
	}, {
		name: "stale",
		body: intent,
		header: func(b []byte) string {
			return stripeSign(testWebhookSecret, now.Add(-payment.EventTolerance-time.Second), b)
		},
		wantErr: payment.ErrEventStale,
	}, {
		name: "future",
		body: intent,
		header: func(b []byte) string {
			return stripeSign(testWebhookSecret, now.Add(payment.EventTolerance+time.Second), b)
		},
		wantErr: payment.ErrEventStale,
	}, {
		name:    "unsigned",
		body:    intent,
		header:  func([]byte) string { return "" },
		wantErr: payment.ErrEventUnsigned,
	}, {
		name:    "header without a signature",
		body:    intent,
		header:  func([]byte) string { return fmt.Sprintf("t=%d", now.Unix()) },
		wantErr: payment.ErrEventUnsigned,
	}, {
		name:    "malformed header",
		body:    intent,
		header:  func([]byte) string { return "garbage" },
		wantErr: payment.ErrEventUnsigned,
	}, {
		name:    "malformed body",
		body:    []byte(`{"id":`),
		header:  func(b []byte) string { return stripeSign(testWebhookSecret, now, b) },
		wantErr: payment.ErrEventMalformed,
	}, {
		name:    "not an event",
		body:    []byte(`{"id":"pi_1","object":"payment_intent"}`),
		header:  func(b []byte) string { return stripeSign(testWebhookSecret, now, b) },
		wantErr: payment.ErrEventMalformed,
	}, {
		name:    "names no object",
		body:    stripeEvent("payment_intent.succeeded", `{"object":"payment_intent"}`),
		header:  func(b []byte) string { return stripeSign(testWebhookSecret, now, b) },
		wantErr: payment.ErrEventMalformed,
	}, {
		name:    "oversized",
		body:    stripeEvent("payment_intent.succeeded", `{"id":"pi_1","description":"`+strings.Repeat("x", payment.MaxEventBytes)+`"}`),
		header:  func(b []byte) string { return stripeSign(testWebhookSecret, now, b) },
		wantErr: payment.ErrEventTooLarge,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ParseEvent(tt.body, tt.header(tt.body), testWebhookSecret, now)
			if tt.wantErr != nil {
				g.Expect(err).To(MatchError(tt.wantErr))
				g.Expect(err.Error()).NotTo(ContainSubstring(testWebhookSecret))
				g.Expect(err.Error()).NotTo(ContainSubstring("v1="))
			} else {
				g.Expect(err).NotTo(HaveOccurred())
			}
			if tt.want.ID == "" {
				return
			}
			g.Expect(got.Live).To(HaveValue(Equal(strings.Contains(string(tt.body), `"livemode":true`))))
			tt.want.Live = got.Live
			tt.want.Created = time.Unix(1700000000, 0)
			g.Expect(got).To(Equal(tt.want))
		})
	}
}
