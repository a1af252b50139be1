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

package ledgertest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
)

// What a process finds, compared with what was recorded.

// named is a handle and who it is in a case's errors.
type named struct {
	l   Ledger
	who string
}

// expectEntry returns an error unless l finds want under want.Key, as
// recorded (At to the second).
func expectEntry(ctx context.Context, l Ledger, want ledger.Entry, who string) error {
	got, found, err := l.Find(ctx, want.Key)
	switch {
	case err != nil:
		return fmt.Errorf("%s: Find(%q): %w", who, want.Key, err)
	case !found:
		return fmt.Errorf("%s: Find(%q) found nothing; want %s", who, want.Key, describe(want))
	}
	if d := diff(got, want); len(d) > 0 {
		return fmt.Errorf("%s: Find(%q) = %s; want %s: %s", who, want.Key, describe(got), describe(want), strings.Join(d, "; "))
	}
	return nil
}

// expectRecorded returns an error unless err, the result of who's Record
// of e once the key holds kept, says so: nil when kept is e's outcome
// (ledger.Entry.SameOutcome), a *ledger.ConflictError holding kept when it
// is another.
func expectRecorded(err error, e, kept ledger.Entry, who string) error {
	var conflict *ledger.ConflictError
	switch {
	case e.SameOutcome(kept):
		if err != nil {
			return fmt.Errorf("%s: Record(%q) of the outcome the key holds = %w; want nil: it is the same outcome", who, e.Key, err)
		}
	case err == nil:
		return fmt.Errorf("%s: Record(%q) of %s = nil, while the key holds %s; want a *ledger.ConflictError: "+
			"the caller would take the ledger's outcome for its own", who, e.Key, describe(e), describe(kept))
	case !errors.As(err, &conflict):
		return fmt.Errorf("%s: Record(%q) of %s, while the key holds %s = %w; want a *ledger.ConflictError",
			who, e.Key, describe(e), describe(kept), err)
	default:
		if d := diff(conflict.Held, kept); len(d) > 0 {
			return fmt.Errorf("%s: Record(%q) reports the key holds %s; it holds %s: %s",
				who, e.Key, describe(conflict.Held), describe(kept), strings.Join(d, "; "))
		}
		if strings.Contains(err.Error(), kept.Charge) && kept.Charge != "" {
			return fmt.Errorf("%s: the conflict's message %q names the charge the key holds: it may be another tenant's",
				who, err.Error())
		}
	}
	return nil
}

// expectAbsent returns an error unless Find of key on l is (zero, false,
// nil) and Has is false.
func expectAbsent(ctx context.Context, l Ledger, key, who string) error {
	got, found, err := l.Find(ctx, key)
	switch {
	case err != nil:
		return fmt.Errorf("%s: Find(%q): %w", who, key, err)
	case found:
		return fmt.Errorf("%s: Find(%q) = %s; want nothing", who, key, describe(got))
	case got != ledger.Entry{}:
		return fmt.Errorf("%s: Find(%q) returned %+v with found false; want the zero Entry", who, key, got)
	}
	has, err := l.Has(ctx, key)
	switch {
	case err != nil:
		return fmt.Errorf("%s: Has(%q): %w", who, key, err)
	case has:
		return fmt.Errorf("%s: Has(%q) is true; want false (Find finds nothing)", who, key)
	}
	return nil
}

// expectHas returns an error unless Has of key on l is true.
func expectHas(ctx context.Context, l Ledger, key, who string) error {
	has, err := l.Has(ctx, key)
	switch {
	case err != nil:
		return fmt.Errorf("%s: Has(%q): %w", who, key, err)
	case !has:
		return fmt.Errorf("%s: Has(%q) of a recorded key is false (Find finds it)", who, key)
	}
	return nil
}

// diff names the fields in which got differs from want as a ledger stores
// it: every field equal, At the same instant to the second. Empty when got
// is want.
func diff(got, want ledger.Entry) []string {
	fields := []struct {
		name      string
		got, want string
	}{
		{"Key", got.Key, want.Key},
		{"Fingerprint", got.Fingerprint, want.Fingerprint},
		{"Provider.UID", got.Provider.UID, want.Provider.UID},
		{"Provider.Endpoint", got.Provider.Endpoint, want.Provider.Endpoint},
		{"Provider.Account", got.Provider.Account, want.Provider.Account},
		{"Provider.Mode", got.Provider.Mode, want.Provider.Mode},
		{"Provider.KeyScope", got.Provider.KeyScope, want.Provider.KeyScope},
		{"Charge", got.Charge, want.Charge},
		{"Amount", strconv.FormatInt(got.Amount, 10), strconv.FormatInt(want.Amount, 10)},
		{"Currency", got.Currency, want.Currency},
		{"RefundedCharge", got.RefundedCharge, want.RefundedCharge},
		{"Outcome", string(got.Outcome), string(want.Outcome)},
		{"Reason", got.Reason, want.Reason},
		{"ResolvedBy", got.ResolvedBy, want.ResolvedBy},
		{"At", stamp(got.At), stamp(want.At)},
	}
	var d []string
	for _, f := range fields {
		if f.got != f.want {
			d = append(d, fmt.Sprintf("%s is %q, want %q", f.name, f.got, f.want))
		}
	}
	return d
}

// stamp is t to the second, in UTC: what every ledger keeps of it.
func stamp(t time.Time) string {
	return t.UTC().Truncate(time.Second).Format(time.RFC3339)
}

// describe is e in a few words, for errors.
func describe(e ledger.Entry) string {
	what := string(e.Outcome)
	if e.Charge != "" {
		what += " as " + e.Charge
	}
	if e.Reason != "" {
		what += " (" + e.Reason + ")"
	}
	if e.ResolvedBy != "" {
		what += " resolved by " + e.ResolvedBy
	}
	at := e.Provider.Account
	if at == "" {
		at = e.Provider.Endpoint
	}
	return fmt.Sprintf("%s at %s on %s", what, at, stamp(e.At))
}
