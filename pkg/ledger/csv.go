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

package ledger

import (
	"encoding/csv"
	"io"
	"strconv"
	"time"
)

// CSVHeader is the first line CSVWriter writes: the names of its columns.
var CSVHeader = []string{"at", "key", "namespace", "outcome", "reason", "charge", "amount", "currency",
	"fingerprint", "provider_endpoint", "provider_account", "resolved_by"}

// CSVWriter writes entries as CSV (RFC 4180, by encoding/csv): CSVHeader,
// then a line per entry. Times are RFC 3339 in UTC (fractions of a second
// only where the ledger kept them); amount is in the currency's minor
// unit, and empty with currency for an entry recorded before the ledger
// kept them.
type CSVWriter struct {
	w      *csv.Writer
	header bool
}

// NewCSVWriter returns a CSVWriter to w. Call Flush when done: it writes
// the header of an export without entries too.
func NewCSVWriter(w io.Writer) *CSVWriter {
	return &CSVWriter{w: csv.NewWriter(w)}
}

// Write writes e's line, after the header if it is the first.
func (c *CSVWriter) Write(e Entry) error {
	if err := c.writeHeader(); err != nil {
		return err
	}
	amount := ""
	if e.Amount != 0 || e.Currency != "" {
		amount = strconv.FormatInt(e.Amount, 10)
	}
	return c.w.Write([]string{e.At.UTC().Format(time.RFC3339Nano), e.Key, e.Namespace, string(e.Outcome),
		e.Reason, e.Charge, amount, e.Currency, e.Fingerprint, e.Provider.Endpoint, e.Provider.Account,
		e.ResolvedBy})
}

// Flush writes the header if no entry was written, then whatever is
// buffered, and returns the first error of a write to the underlying
// writer.
func (c *CSVWriter) Flush() error {
	if err := c.writeHeader(); err != nil {
		return err
	}
	c.w.Flush()
	return c.w.Error()
}

func (c *CSVWriter) writeHeader() error {
	if c.header {
		return nil
	}
	c.header = true
	return c.w.Write(CSVHeader)
}
