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

package books

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Report is a reconciliation's findings for one provider account and
// window, with their counts.
type Report struct {
	// Provider names the provider account the report is about.
	Provider string `json:"provider"`
	// From and To bound the window: objects created at From or later and
	// before To.
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Listed says the provider listed its objects of the window. Without a
	// list the provider was asked for the cluster's keys only: money moved
	// under a key the cluster does not know cannot be found.
	Listed   bool      `json:"listed"`
	Findings []Finding `json:"findings"`
}

// Counts returns the number of findings of each category, every category
// present.
func (r Report) Counts() map[Category]int {
	counts := make(map[Category]int, len(Categories))
	for _, c := range Categories {
		counts[c] = 0
	}
	for _, f := range r.Findings {
		counts[f.Category]++
	}
	return counts
}

// Discrepancies is the number of findings that are not Matched.
func (r Report) Discrepancies() int {
	n := 0
	for _, f := range r.Findings {
		if f.Category.Discrepancy() {
			n++
		}
	}
	return n
}

// Columns are the CSV report's columns, in order. They are a contract
// with whoever keeps the reports: new columns go at the end.
var Columns = []string{
	"category", "kind", "key", "object", "in_ledger", "cluster_id", "cluster_amount", "cluster_currency",
	"provider_ids", "provider_amount", "provider_currency", "detail", "action",
	"charge_object", "charge_in_ledger", "charge_id", "charge_left", "object_deleted", "charge_object_deleted",
}

// CSV renders the findings as CSV with a header of Columns: amounts in
// minor units, provider ids joined with spaces, RFC 4180 quoting.
func (r Report) CSV() []byte {
	var b bytes.Buffer
	w := csv.NewWriter(&b)
	_ = w.Write(Columns)
	for _, f := range r.Findings {
		_ = w.Write([]string{
			string(f.Category), string(f.Kind), f.Key, f.Object, strconv.FormatBool(f.InLedger),
			f.ClusterID, amount(f.ClusterAmount, f.ClusterCurrency), f.ClusterCurrency,
			strings.Join(f.ProviderIDs, " "), amount(f.ProviderAmount, f.ProviderCurrency), f.ProviderCurrency,
			f.Detail, f.Action,
			f.ChargeObject, strconv.FormatBool(f.ChargeInLedger), f.ChargeID, left(f.ChargeLeft),
			strconv.FormatBool(f.ObjectDeleted), strconv.FormatBool(f.ChargeObjectDeleted),
		})
	}
	w.Flush() // a bytes.Buffer does not fail
	return b.Bytes()
}

// amount is n in minor units, empty when neither it nor its currency is
// known.
func amount(n int64, currency string) string {
	if n == 0 && currency == "" {
		return ""
	}
	return strconv.FormatInt(n, 10)
}

// left is what is left of a charge in minor units, empty when unknown.
func left(n *int64) string {
	if n == nil {
		return ""
	}
	return strconv.FormatInt(*n, 10)
}

// JSON renders the report as one JSON object: the window, whether the
// provider listed, the counts and the findings.
func (r Report) JSON() []byte {
	out, err := json.Marshal(struct {
		Report
		Counts map[Category]int `json:"counts"`
	}{r, r.Counts()})
	if err != nil {
		// Only strings, numbers, booleans and times: Marshal cannot fail.
		panic(err)
	}
	return out
}

// SHA256 is the hex sha256 of the CSV report: what a status records, and
// what a copy kept by finance is checked against.
func (r Report) SHA256() string {
	sum := sha256.Sum256(r.CSV())
	return hex.EncodeToString(sum[:])
}
