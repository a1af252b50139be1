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
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// The values of -o.
const (
	outputTable = "table"
	outputJSON  = "json"
	outputYAML  = "yaml"
	outputCSV   = "csv"
)

func checkOutput(output string, allowed ...string) error {
	if slices.Contains(allowed, output) {
		return nil
	}
	return usageError("--output %q is not one of %s", output, strings.Join(allowed, ", "))
}

// printData writes v as indented JSON or as YAML.
func printData(w io.Writer, output string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if output == outputYAML {
		if b, err = yaml.JSONToYAML(b); err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// ago says how long before now t was, as kubectl's ages do: "3m12s ago".
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	if t.After(now) {
		return "in " + duration.HumanDuration(t.Sub(now))
	}
	return duration.HumanDuration(now.Sub(t)) + " ago"
}

func money(amount int64, currency string) string {
	if currency == "" {
		return fmt.Sprintf("%d", amount)
	}
	return fmt.Sprintf("%d %s", amount, currency)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// describeProvider is one line about the account a payment went to.
func describeProvider(ref string, id *paymentsv1alpha1.ProviderIdentity) string {
	if id == nil {
		return ref
	}
	var parts []string
	if id.Account != "" {
		parts = append(parts, "account "+id.Account)
	}
	if id.Endpoint != "" {
		parts = append(parts, id.Endpoint)
	}
	if id.Mode != "" {
		parts = append(parts, id.Mode+" mode")
	}
	if id.KeyScope != "" {
		parts = append(parts, "key scope "+id.KeyScope)
	}
	if len(parts) == 0 {
		return ref
	}
	return ref + " (" + strings.Join(parts, ", ") + ")"
}

// printStory writes s as one screen, like kubectl describe.
func printStory(out io.Writer, s *Story, now time.Time) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	p("%s %s/%s", s.Kind, s.Namespace, s.Name)
	p("  Phase:\t%s", s.Phase)
	if s.Why != "" {
		p("  Why:\t%s", s.Why)
	}
	if s.Suspended {
		p("  Suspended:\tyes (kubectl payments approve %s/%s)", shortKind(s.Kind), s.Name)
	}
	p("  Amount:\t%s", money(s.Amount, s.Currency))
	if s.PaymentJob != "" {
		p("  Refunds:\tpj/%s", s.PaymentJob)
	}
	printRefunded(p, s)
	p("  Provider:\t%s", describeProvider(s.ProviderRef, s.Provider))
	p("  Idempotency key:\t%s", orDash(s.IdempotencyKey))
	if s.RequestHash != "" {
		p("  Request hash:\t%s", s.RequestHash)
	}
	p("  Attempts:\t%d", s.Attempts)
	if c := s.Claim; c != nil {
		state := "expires " + ago(c.ExpiresAt.Time, now)
		if c.ExpiresAt.Time.Before(now) {
			state = "expired " + ago(c.ExpiresAt.Time, now)
		}
		p("  Claim:\t%s, taken %s, %s", c.Holder, ago(c.AcquiredAt.Time, now), state)
	}
	if r := s.Response; r != nil {
		line := fmt.Sprintf("%s %s %s", r.ID, orDash(r.Status), money(r.Amount, r.Currency))
		if r.Replayed {
			line += " (replayed)"
		}
		p("  Provider answer:\t%s", line)
	}
	printSettling(p, s, now)
	if f := s.Failure; f != nil {
		p("  Failure:\t%s: %s", f.Reason, f.Message)
	}
	if r := s.Resolution; r != nil {
		verified := "not verified at the provider"
		if r.Verified {
			verified = "verified at the provider"
		}
		p("  Resolution:\t%s by %s %s, %s", r.Value, orDash(r.By), ago(r.At.Time, now), verified)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	printConditions(out, s, now)
	printRefundLines(out, s)
	printLedgerLine(out, s, now)
	printEvents(out, s, now)
	printProviderCheck(out, s, now)
	printNext(out, s)
	return nil
}

// printRefunded writes, with p, what was refunded of the charge and what
// is left, and what the count could not see.
func printRefunded(p func(string, ...any), s *Story) {
	title := "Refunded:"
	if s.Kind == string(kindRefund) {
		title = "Charge refunded:"
	}
	switch {
	case s.Refunded != nil:
		p("  %s\t%s", title, s.Refunded.line())
		for _, n := range s.Refunded.Notes {
			p("  \t%s", n)
		}
	case s.RefundedError != "":
		p("  %s\tcannot be told: %s", title, s.RefundedError)
	}
}

func shortKind(k string) string {
	if k == string(kindRefund) {
		return "prefund"
	}
	return "pj"
}

func table(out io.Writer, title string, header string, rows [][]string) {
	fmt.Fprintln(out, title)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "  "+header)
	for _, r := range rows {
		fmt.Fprintln(w, "  "+strings.Join(r, "\t"))
	}
	_ = w.Flush()
}

func printConditions(out io.Writer, s *Story, now time.Time) {
	if len(s.Conditions) == 0 {
		fmt.Fprintln(out, "Conditions: none yet")
		return
	}
	rows := make([][]string, 0, len(s.Conditions))
	for _, c := range s.Conditions {
		rows = append(rows, []string{c.Type, string(c.Status), c.Reason, ago(c.LastTransitionTime.Time, now), c.Message})
	}
	table(out, "Conditions:", "TYPE\tSTATUS\tREASON\tSINCE\tMESSAGE", rows)
}

func printRefundLines(out io.Writer, s *Story) {
	if s.Kind != string(kindJob) {
		return
	}
	rows := make([][]string, 0, len(s.Refunds))
	for _, r := range s.Refunds {
		rows = append(rows, []string{r.Name, orDash(r.Phase), money(r.Amount, s.Currency), orDash(r.ID), orDash(r.Why)})
	}
	if p := s.Refunded; p != nil {
		// Refunds without a PaymentRefund: deleted ones the ledger or
		// the provider knows, and those made outside the operator.
		for _, r := range p.Refunds {
			switch {
			case r.Outside:
				rows = append(rows, []string{"(outside the operator, no key)", "-", money(r.Amount, s.Currency), "-", "-"})
			case !strings.HasPrefix(r.Name, "prefund/"):
				rows = append(rows, []string{r.Name, "-", money(r.Amount, s.Currency), "-", "-"})
			}
		}
	}
	if len(rows) == 0 {
		fmt.Fprintln(out, "Refunds: none")
		return
	}
	table(out, "Refunds:", "NAME\tPHASE\tAMOUNT\tID\tWHY", rows)
}

func printLedgerLine(out io.Writer, s *Story, now time.Time) {
	title := fmt.Sprintf("Ledger (%s):", s.Ledger.Backend)
	switch {
	case s.Ledger.Error != "":
		fmt.Fprintf(out, "%s cannot be read: %s\n", title, s.Ledger.Error)
	case s.IdempotencyKey == "" && s.Ledger.Note != "":
		fmt.Fprintf(out, "%s %s\n", title, s.Ledger.Note)
	case s.IdempotencyKey == "":
		fmt.Fprintf(out, "%s nothing to look for: the payment has no idempotency key yet\n", title)
	case !s.Ledger.Found:
		fmt.Fprintf(out, "%s no entry under %s: %s\n", title, s.IdempotencyKey, s.Ledger.Note)
	default:
		rows := make([][]string, 0, len(s.Ledger.Entries))
		for _, e := range s.Ledger.Entries {
			rows = append(rows, []string{string(e.Outcome), orDash(e.Reason), entryCharge(e), money(e.Amount, e.Currency), ago(e.At, now), e.Key})
		}
		table(out, title, "OUTCOME\tREASON\tCHARGE\tAMOUNT\tRECORDED\tKEY", rows)
	}
}

func printEvents(out io.Writer, s *Story, now time.Time) {
	if s.EventsError != "" {
		fmt.Fprintf(out, "Events: cannot be read: %s\n", s.EventsError)
		return
	}
	if len(s.Events) == 0 {
		fmt.Fprintln(out, "Events: none (events expire after an hour by default)")
		return
	}
	rows := make([][]string, 0, len(s.Events))
	for _, e := range s.Events {
		reason := e.Reason
		if e.Count > 1 {
			reason = fmt.Sprintf("%s (x%d)", e.Reason, e.Count)
		}
		rows = append(rows, []string{e.Type, reason, ago(e.Last, now), e.Message})
	}
	table(out, "Events:", "TYPE\tREASON\tLAST SEEN\tMESSAGE", rows)
}

func printProviderCheck(out io.Writer, s *Story, now time.Time) {
	c := s.ProviderCheck
	if c == nil {
		return
	}
	title := fmt.Sprintf("At the provider (read-only), under %s:", c.Key)
	for _, w := range c.Warnings {
		fmt.Fprintf(out, "Warning: %s\n", w)
	}
	switch {
	case c.Error != "":
		fmt.Fprintf(out, "At the provider (read-only): %s\n", c.Error)
		return
	case len(c.Charges) == 0:
		fmt.Fprintf(out, "%s nothing\n", title)
		return
	}
	var rows [][]string
	for _, ch := range c.Charges {
		rows = append(rows, []string{ch.ID, ch.State, orDash(ch.Status), money(ch.Amount, ch.Currency), ago(ch.Created, now)})
		var keyed int64
		for _, rf := range ch.Refunds {
			if rf.State != "NotCharged" {
				keyed += rf.Amount
			}
			rows = append(rows, []string{"  refund " + rf.ID, rf.State, orDash(rf.Status), money(rf.Amount, rf.Currency), ago(rf.Created, now)})
		}
		if other := ch.Refunded - keyed; other > 0 {
			rows = append(rows, []string{"  refunds outside the operator (no key)", "-", "-", money(other, ch.Currency), "-"})
		}
	}
	table(out, title, "ID\tSTATE\tSTATUS\tAMOUNT\tCREATED", rows)
}

func printNext(out io.Writer, s *Story) {
	if len(s.Next) == 0 {
		return
	}
	fmt.Fprintln(out, "Next:")
	for _, n := range s.Next {
		fmt.Fprintf(out, "  %s%s:\n    %s\n", strings.ToUpper(n.Why[:1]), n.Why[1:], n.Command)
	}
}
