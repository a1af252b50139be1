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

// Keys the service cannot be sent are refused before anything is sent, by
// Charge and by Lookup alike.

import (
	"context"
	"net/http"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/httpprovider"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/paymenttest"
)

func TestChargeRefusesAKeyItCannotSend(t *testing.T) {
	for name, key := range paymenttest.InvalidKeys() {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			srv, requests := newServer(t, answer(http.StatusOK, nil, `{"id":"ch_1"}`))
			p := newProvider(t, httpprovider.Config{URL: srv.URL})

			_, err := p.Charge(context.Background(), key, testRequest)

			g.Expect(err).To(MatchError(payment.ErrInvalid))
			g.Expect(requests).To(BeEmpty())
		})
	}
}

func TestLookupRefusesKeysItCannotSend(t *testing.T) {
	eleven := paymenttest.Keys(payment.MaxLookupKeys + 1)
	tests := map[string][]string{
		"no keys":                 nil,
		"more than MaxLookupKeys": eleven,
	}
	for name, key := range paymenttest.InvalidKeys() {
		tests["a key "+name] = []string{testKey, key}
	}
	for name, keys := range tests {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			srv, requests := newServer(t, answer(http.StatusOK, nil, noCharges))
			p := newLooker(t, srv, httpprovider.Config{})

			found, err := p.Lookup(context.Background(), keys)

			g.Expect(found).To(BeNil())
			expectTransient(g, err)
			g.Expect(requests).To(BeEmpty())
		})
	}

	t.Run("exactly MaxLookupKeys", func(t *testing.T) {
		g := NewWithT(t)
		srv, requests := newServer(t, answer(http.StatusOK, nil, noCharges))
		p := newLooker(t, srv, httpprovider.Config{})

		_, err := p.Lookup(context.Background(), eleven[:payment.MaxLookupKeys])

		g.Expect(err).NotTo(HaveOccurred())
		got := drain(requests)
		g.Expect(got).To(HaveLen(1))
		g.Expect(got[0].query["key"]).To(Equal(eleven[:payment.MaxLookupKeys]))
	})
}
