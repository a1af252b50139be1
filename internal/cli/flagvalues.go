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

package cli

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Values of flags that the API would refuse, or that would name nothing,
// refused before any request with a usage error (exit 2) that says what
// is wrong: amounts in minor units, object names, idempotency keys.

// minorUnits is the value of an amount flag: a whole number of the
// currency's minor unit. A decimal amount is refused with the number it
// likely meant in a currency of cents; the flag's currency is not known
// when it is parsed, so none is assumed.
type minorUnits struct {
	flag string
	v    *int64
}

func (m minorUnits) String() string { return strconv.FormatInt(*m.v, 10) }

// Type is what the help shows after the flag.
func (m minorUnits) Type() string { return "int" }

func (m minorUnits) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err == nil {
		*m.v = n
		return nil
	}
	if errors.Is(err, strconv.ErrRange) {
		return usageError("--%s %q is too large: at most %d minor units", m.flag, s, int64(math.MaxInt64))
	}
	if cents, ok := centsOf(s); ok {
		return usageError("--%s %q is not a whole number of minor units: %s in a currency of cents (usd, eur) is --%s %d",
			m.flag, s, s, m.flag, cents)
	}
	return usageError("--%s %q is not a whole number of minor units (cents for usd, yen for jpy)", m.flag, s)
}

// decimalRE is a positive amount with one or two decimals: 10.5, 10.50.
var decimalRE = regexp.MustCompile(`^([0-9]+)\.([0-9]{1,2})$`)

// centsOf is s, a decimal amount, in hundredths.
func centsOf(s string) (int64, bool) {
	m := decimalRE.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	whole, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil || whole > (math.MaxInt64-99)/100 {
		return 0, false
	}
	frac, _ := strconv.ParseInt((m[2] + "0")[:2], 10, 64)
	return whole*100 + frac, true
}

// checkObjectName refuses value of flag when it cannot be an object's
// name (a DNS-1123 subdomain), saying what is wrong with it.
func checkObjectName(flag, value string) error {
	if len(validation.IsDNS1123Subdomain(value)) == 0 {
		return nil
	}
	var problem string
	switch bad := outside(value, "abcdefghijklmnopqrstuvwxyz0123456789-."); {
	case len(value) > validation.DNS1123SubdomainMaxLength:
		problem = fmt.Sprintf("it has %d characters, more than %d", len(value), validation.DNS1123SubdomainMaxLength)
	case bad != "":
		problem = "it has " + bad + "; use lowercase letters, digits, '-' and '.'"
	default:
		problem = "it must start and end with a lowercase letter or a digit, as must each part between dots"
	}
	return usageError("--%s %q is not an object name: %s", flag, value, problem)
}

// keyRE is the pattern of an idempotency key in the API
// (spec.idempotencyKey, spec.paymentJobRef.idempotencyKey).
var keyRE = regexp.MustCompile(`^[A-Za-z0-9._:/-]+$`)

// checkKey refuses value of flag when the API would refuse it as an
// idempotency key: 1 to maxRefKey characters of keyRE.
func checkKey(flag, value string) error {
	switch {
	case len(value) > maxRefKey:
		return usageError("--%s %q is not an idempotency key: it has %d characters, more than %d", flag, value, len(value), maxRefKey)
	case !keyRE.MatchString(value):
		return usageError("--%s %q is not an idempotency key: it has %s; a key is letters, digits and . _ : / -", flag, value,
			outside(value, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._:/-"))
	}
	return nil
}

// outside lists, quoted, the characters of s that allowed does not hold,
// each once, in the order they come.
func outside(s, allowed string) string {
	var bad []string
	for _, r := range s {
		if q := strconv.Quote(string(r)); !strings.ContainsRune(allowed, r) && !slices.Contains(bad, q) {
			bad = append(bad, q)
		}
	}
	return strings.Join(bad, ", ")
}
