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
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

func TestVisibleAndPrintableASCII(t *testing.T) {
	tests := []struct {
		in               string
		visible, printed bool
	}{
		{in: "", visible: true, printed: true},
		{in: "sk_test_!~", visible: true, printed: true},
		{in: "Bearer tok", printed: true},
		{in: "tab\there"},
		{in: "line\nbreak"},
		{in: "del\x7f"},
		{in: "ключ"},
		{in: "caf\xe9"},
	}
	for _, tt := range tests {
		g := NewWithT(t)
		g.Expect(payment.VisibleASCII(tt.in)).To(Equal(tt.visible), "VisibleASCII(%q)", tt.in)
		g.Expect(payment.PrintableASCII(tt.in)).To(Equal(tt.printed), "PrintableASCII(%q)", tt.in)
	}
	for c := range 256 {
		s := string([]byte{byte(c)})
		NewWithT(t).Expect(payment.VisibleASCII(s)).To(Equal(c >= '!' && c <= '~'), "byte %#x", c)
	}
}

func TestCleanMessage(t *testing.T) {
	const token = "tok with  spaces"
	tests := []struct {
		name    string
		in      string
		limit   int
		secrets []string
		want    string
	}{
		{name: "plain", in: "card declined", want: "card declined"},
		{name: "lines, tabs and control characters", in: "card\r\n\tdeclined\x00 ", want: "card declined"},
		{name: "spaces at both ends", in: "  card declined \n", limit: 50, want: "card declined"},
		{name: "a secret", in: "Bearer tok with  spaces", secrets: []string{token}, want: "Bearer [redacted]"},
		{name: "a secret formed by joining lines", in: "x tok with\n\nspaces", secrets: []string{token}, want: "x [redacted]"},
		{name: "a secret with its spaces collapsed", in: "tok with spaces.", secrets: []string{token}, want: "[redacted]."},
		{name: "an empty secret removes nothing", in: "card declined", secrets: []string{""}, want: "card declined"},
		{
			name: "a secret that holds another is removed whole", in: "key sk_live_abc and sk_live_abcdef",
			secrets: []string{"sk_live_abc", "sk_live_abcdef"}, want: "key [redacted] and [redacted]",
		},
		{name: "invalid UTF-8", in: "caf\xe9", want: "caf\uFFFD"},
		{name: "exactly the limit is not cut", in: "abcde", limit: 5, want: "abcde"},
		{name: "one byte over the limit is cut", in: "abcdef", limit: 5, want: "abcde..."},
		{name: "cut on a character boundary", in: "aéé", limit: 4, want: "aé..."},
		{name: "a secret is removed before the cut", in: "12345 sk_live_abcdef", limit: 10, secrets: []string{"sk_live_abcdef"}, want: "12345 [red..."},
		{name: "no limit", in: strings.Repeat("x", 2000), want: strings.Repeat("x", 2000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(payment.CleanMessage(tt.in, tt.limit, tt.secrets...)).To(Equal(tt.want))
		})
	}
}

func TestCleanMessageBoundsLongMessages(t *testing.T) {
	const secret = "sk_test_51SecretKeyThatMustNeverLeak0123456789"
	long := strings.Repeat("é", 400) + "\n" + secret + "\x00" + strings.Repeat("x", 600)
	for _, limit := range []int{1, 199, 200, 201, 500} {
		g := NewWithT(t)
		got := payment.CleanMessage(long, limit, secret)
		g.Expect(len(got)).To(BeNumerically("<=", limit+len("...")), "limit %d", limit)
		g.Expect(got).To(HaveSuffix("..."))
		g.Expect(utf8.ValidString(got)).To(BeTrue())
		g.Expect(got).To(Equal(strings.Repeat("é", limit/2) + "..."))
	}
	g := NewWithT(t)
	got := payment.CleanMessage(long, 1000, secret)
	g.Expect(got).To(HavePrefix(strings.Repeat("é", 400) + " [redacted] xxx"))
	g.Expect(got).NotTo(ContainSubstring(secret[:12]))
	g.Expect(strings.ContainsAny(got, "\n\x00")).To(BeFalse())
}

func TestValidReason(t *testing.T) {
	valid := []string{
		"CardDeclined", "InsufficientFunds", "insufficient_funds", "a", "Z9", "Card_", "card:declined,again",
		strings.Repeat("R", payment.MaxReasonLength),
	}
	invalid := []string{
		"", "9Lives", "_card", "Card Declined", "card-declined", "card.declined", "CardDeclined:", "Card,",
		"Karte\u00e4", "Card\n", strings.Repeat("R", payment.MaxReasonLength+1),
	}
	g := NewWithT(t)
	for _, s := range valid {
		g.Expect(payment.ValidReason(s)).To(BeTrue(), "%q is a condition reason", s)
	}
	for _, s := range invalid {
		g.Expect(payment.ValidReason(s)).To(BeFalse(), "%q is not a condition reason", s)
	}
}

// TestValidReasonIsTheAPIPattern compares ValidReason with the API's pattern
// for condition reasons on every string of up to four characters drawn from
// letters, digits and the characters around the pattern's edges.
func TestValidReasonIsTheAPIPattern(t *testing.T) {
	pattern := regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)
	const alphabet = "aZ0_,:- .\xc3"
	g := NewWithT(t)
	var each func(prefix string)
	each = func(prefix string) {
		g.Expect(payment.ValidReason(prefix)).To(Equal(pattern.MatchString(prefix)), "%q", prefix)
		if len(prefix) == 4 {
			return
		}
		for i := 0; i < len(alphabet); i++ {
			each(prefix + alphabet[i:i+1])
		}
	}
	each("")
}

func TestBoundKeepsIdentifiersAsSent(t *testing.T) {
	g := NewWithT(t)
	g.Expect(payment.Bound("pi_ 1  2", 64)).To(Equal("pi_ 1  2"), "spaces inside an identifier are kept")
	g.Expect(payment.Bound(" acct_1 ", 64)).To(Equal(" acct_1 "), "and at its ends")
	g.Expect(payment.Bound("abcdef", 3)).To(Equal("abc..."))
	g.Expect(payment.Bound("ééé", 3)).To(Equal("é..."), "cut on a character boundary")
	g.Expect(payment.Bound("abc", 0)).To(Equal("abc"), "no limit")
}
