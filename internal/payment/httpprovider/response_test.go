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

package httpprovider

import (
	"strings"
	"testing"
	"unicode/utf8"

	. "github.com/onsi/gomega"
)

// TestCleanRedactsTheTokenAndBoundsTheMessage checks what the adapter gives
// payment.CleanMessage, whose rule TestCleanMessage covers: the token, and a
// limit of maxMessageLength bytes.
func TestCleanRedactsTheTokenAndBoundsTheMessage(t *testing.T) {
	g := NewWithT(t)
	p := &Provider{token: "tok with  spaces"}

	g.Expect(p.clean("Bearer tok with\n\nspaces\r\n")).To(Equal("Bearer [redacted]"))
	got := p.clean(strings.Repeat("é", 2*maxMessageLength))
	g.Expect(utf8.ValidString(got)).To(BeTrue())
	g.Expect(got).To(Equal(strings.Repeat("é", maxMessageLength/2)+"..."), "cut to maxMessageLength bytes on a character boundary")
}

func TestOnlyParsedFieldsOfTheBodyReachAnError(t *testing.T) {
	p := &Provider{token: "tok"}
	long := strings.Repeat("x", maxMessageLength)
	tests := []struct {
		name       string
		body       string
		wantReason string
		wantMsg    string // explain's message
		wantSaid   string // serviceSaid
	}{
		{name: "message", body: `{"message":"card expired"}`, wantMsg: "card expired", wantSaid: "; the service said: card expired"},
		{name: "reason and message", body: `{"reason":"CardExpired","message":"card expired"}`, wantReason: "CardExpired", wantMsg: "card expired", wantSaid: "; the service said: card expired"},
		{name: "problem details", body: `{"title":"Bad Request","detail":"amount too small"}`, wantMsg: "amount too small", wantSaid: "; the service said: amount too small"},
		{name: "reason only", body: `{"reason":"Throttled"}`, wantReason: "Throttled", wantMsg: "payment service answered 402 Payment Required", wantSaid: "; the service said: Throttled"},
		{name: "a field cleaned", body: `{"message":"line\none tok"}`, wantMsg: "line one [redacted]", wantSaid: "; the service said: line one [redacted]"},
		{name: "a field bounded", body: `{"message":"` + long + `yz"}`, wantMsg: long + "...", wantSaid: "; the service said: " + long + "..."},
		{name: "other JSON fields", body: `{"error":{"message":"nested"},"debug":"stack"}`, wantMsg: "payment service answered 402 Payment Required"},
		{name: "text", body: "card declined", wantMsg: "payment service answered 402 Payment Required"},
		{name: "HTML", body: "<html><title>Router admin</title></html>", wantMsg: "payment service answered 402 Payment Required"},
		{name: "JSON string", body: `"card declined"`, wantMsg: "payment service answered 402 Payment Required"},
		{name: "JSON array", body: `[{"message":"card declined"}]`, wantMsg: "payment service answered 402 Payment Required"},
		{name: "empty", body: "", wantMsg: "payment service answered 402 Payment Required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)

			reason, msg := p.explain(402, []byte(tt.body))

			g.Expect(reason).To(Equal(tt.wantReason))
			g.Expect(msg).To(Equal(tt.wantMsg))
			g.Expect(p.serviceSaid([]byte(tt.body))).To(Equal(tt.wantSaid))
		})
	}
}
