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

package providertest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/pkg/providertest"
)

// What Check refuses before it sends anything, and what it never reports.

func TestCheckNeverReportsTheToken(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)

	results := check(t, refOptions(t, &refService{echoAuth: true}))

	g.Expect(providertest.Failed(results)).To(BeTrue())
	for _, r := range results {
		g.Expect(r.Message).NotTo(ContainSubstring(refToken))
	}
}

func TestCheckRefusesInvalidOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		opts    providertest.Options
		wantErr string
	}{
		{name: "no url", opts: providertest.Options{}, wantErr: "charge url"},
		{name: "not http", opts: providertest.Options{URL: "ftp://127.0.0.1/charges"}, wantErr: "scheme must be http or https"},
		{name: "negative timeout", opts: providertest.Options{URL: "http://127.0.0.1/charges", Timeout: -time.Second},
			wantErr: "negative"},
		{name: "key prefix too long", opts: providertest.Options{URL: "http://127.0.0.1/charges",
			KeyPrefix: strings.Repeat("k", 250)}, wantErr: "key prefix"},
		{name: "key prefix with a space", opts: providertest.Options{URL: "http://127.0.0.1/charges",
			KeyPrefix: "my run/"}, wantErr: "key prefix"},
		{name: "pending without a payment method", opts: providertest.Options{URL: "http://127.0.0.1/charges",
			Pending: &providertest.Pending{}}, wantErr: "Pending.PaymentMethod"},
		{name: "events without a secret", opts: providertest.Options{URL: "http://127.0.0.1/charges",
			Events: &providertest.Events{SendTo: func(string) error { return nil }}}, wantErr: "Events.Secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			results, err := providertest.Check(context.Background(), tt.opts)
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			g.Expect(results).To(BeNil())
		})
	}
}
