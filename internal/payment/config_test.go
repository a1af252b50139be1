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

package payment_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

func TestPollIntervals(t *testing.T) {
	tests := []struct {
		name                  string
		poll, maxPoll         time.Duration
		wantPoll, wantMaxPoll time.Duration
		wantErr               string
	}{
		{name: "defaults", wantPoll: payment.DefaultPollInterval, wantMaxPoll: payment.DefaultMaxPollInterval},
		{name: "both set", poll: time.Second, maxPoll: time.Minute, wantPoll: time.Second, wantMaxPoll: time.Minute},
		{name: "a long interval raises the default maximum", poll: time.Minute, wantPoll: time.Minute, wantMaxPoll: time.Minute},
		{name: "a maximum equal to the interval", poll: time.Second, maxPoll: time.Second, wantPoll: time.Second, wantMaxPoll: time.Second},
		{name: "negative interval", poll: -time.Second, wantErr: "negative poll interval"},
		{name: "negative maximum", maxPoll: -1, wantErr: "negative poll interval"},
		{name: "maximum shorter than the default interval", maxPoll: time.Millisecond, wantErr: "maximum poll interval of 1ms, shorter than the poll interval of 500ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			poll, maxPoll, err := payment.PollIntervals(tt.poll, tt.maxPoll)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect([]time.Duration{poll, maxPoll}).To(Equal([]time.Duration{tt.wantPoll, tt.wantMaxPoll}))
		})
	}
}

func TestParseEndpoint(t *testing.T) {
	const secret = "s3cr3t"
	accepted := []string{"https://api.stripe.com", "http://127.0.0.1:12111/", "https://p.example/v1/charges?tenant=a"}
	refused := map[string]string{
		"":                                      `scheme must be http or https, not ""`,
		"api.stripe.com":                        "scheme must be http or https",
		"ftp://p.example/" + secret:             `not "ftp"`,
		"https://user:" + secret + "@p.example": "it must not contain user information; use the token",
		"https:///charges":                      "it must be absolute, with a host",
		"https:p.example":                       "it must be absolute, with a host",
		"https://p ex/%zz" + secret:             "it is not a valid URL",
	}
	g := NewWithT(t)
	for _, raw := range accepted {
		u, err := payment.ParseEndpoint(raw, "the token")
		g.Expect(err).NotTo(HaveOccurred(), raw)
		g.Expect(u.String()).To(Equal(raw))
	}
	for raw, want := range refused {
		u, err := payment.ParseEndpoint(raw, "the token")
		g.Expect(err).To(MatchError(ContainSubstring(want)), raw)
		g.Expect(err.Error()).NotTo(ContainSubstring(secret), "the URL may hold credentials")
		g.Expect(u).To(BeNil())
	}
}
