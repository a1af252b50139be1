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

package payment

// The rules of the provider edge, written once for every adapter: which text
// may be sent to a provider as it is, how text from a provider is made fit
// for a status, an event or an error, and which reason a job may carry.

import (
	"cmp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxReasonLength is the longest reason ValidReason accepts, in bytes.
const MaxReasonLength = 64

// redacted replaces every secret CleanMessage removes.
const redacted = "[redacted]"

// VisibleASCII reports whether every byte of s is a visible ASCII character,
// '!' to '~': no space, no control character, nothing outside ASCII. The
// empty string is visible ASCII.
func VisibleASCII(s string) bool {
	return asciiFrom(s, '!')
}

// PrintableASCII reports whether every byte of s is a visible ASCII
// character or a space, ' ' to '~': what an HTTP header value may carry as it
// is. The empty string is printable ASCII.
func PrintableASCII(s string) bool {
	return asciiFrom(s, ' ')
}

// asciiFrom reports whether every byte of s is between lowest and '~'.
func asciiFrom(s string, lowest byte) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < lowest || c > '~' {
			return false
		}
	}
	return true
}

// CleanMessage makes text from a provider fit for an error, a status or an
// event. Every non-empty secret is replaced with "[redacted]", as it is and
// with its runs of spaces collapsed; the text is made valid UTF-8 and one
// line (every run of spaces and control characters, line breaks included,
// becomes one space, and none is left at either end); and when the text is
// then longer than limit bytes, it is cut to at most limit bytes on a
// character boundary and "..." is appended. A limit of zero or less does not
// cut. Secrets are removed before the text is cut, so no part of one is ever
// left at the cut.
func CleanMessage(s string, limit int, secrets ...string) string {
	forms := secretForms(secrets)
	s = oneLine(redact(strings.ToValidUTF8(s, "\uFFFD"), forms))
	// Making one line may have formed a secret, or a secret with its spaces
	// collapsed, out of its parts.
	return Bound(redact(s, forms), limit)
}

// Bound cuts s to at most limit bytes on a character boundary and appends
// "..." when it cut; it changes nothing else, so that an identifier a
// provider answered (a charge id, an account) is kept as it was sent
// whenever it fits. A limit of zero or less does not cut. CleanMessage cuts
// with it.
func Bound(s string, limit int) string {
	if limit <= 0 || len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.ToValidUTF8(s[:cut], "") + "..."
}

// secretForms returns every non-empty secret, as it is and with its runs of
// spaces collapsed, longest first, so that a secret that holds another is
// replaced whole.
func secretForms(secrets []string) []string {
	forms := make([]string, 0, 2*len(secrets))
	for _, secret := range secrets {
		for _, form := range []string{secret, oneLine(strings.ToValidUTF8(secret, "\uFFFD"))} {
			if form != "" && !slices.Contains(forms, form) {
				forms = append(forms, form)
			}
		}
	}
	slices.SortStableFunc(forms, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return forms
}

// redact replaces every one of forms in s.
func redact(s string, forms []string) string {
	for _, form := range forms {
		s = strings.ReplaceAll(s, form, redacted)
	}
	return s
}

// oneLine replaces every run of spaces and control characters with one space
// and removes them at both ends.
func oneLine(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}), " ")
}

// ValidReason reports whether s can be a Kubernetes condition reason, and so
// a job's failure reason and event reason: 1 to MaxReasonLength bytes, a
// letter first, then letters, digits, '_', ',' and ':', the last of them not
// ',' or ':' (the API's pattern ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$).
func ValidReason(s string) bool {
	if s == "" || len(s) > MaxReasonLength || !isLetter(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		inner := c == ',' || c == ':'
		if !isLetter(c) && !isDigit(c) && c != '_' && (!inner || i == len(s)-1) {
			return false
		}
	}
	return true
}

// isLetter reports whether c is an ASCII letter.
func isLetter(c byte) bool {
	return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

// isDigit reports whether c is an ASCII digit.
func isDigit(c byte) bool {
	return '0' <= c && c <= '9'
}
