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

package paymentreconciliation

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/books"
)

// A report is cut into pages at row ends, of at most 500 rows and 256 KiB,
// and the pages joined are the report, byte for byte: what the sha256 in
// the status speaks of.
func TestPaginate(t *testing.T) {
	g := NewWithT(t)
	for _, tc := range []struct {
		name  string
		rows  int
		bytes int
		pages int
	}{
		{"no rows: the header alone", 0, 10, 1},
		{"1,200 short rows: by the row count", 1200, 10, 3},
		{"300 rows of 2 KiB: by the size", 300, 2 << 10, 3},
	} {
		var r books.Report
		for i := range tc.rows {
			// A detail with a line break and quotes: a row spans lines.
			r.Findings = append(r.Findings, books.Finding{Category: books.Duplicate, Kind: books.Charge,
				Key: fmt.Sprintf("shop/order-%04d", i), Detail: "\"two\"\n" + strings.Repeat("x", tc.bytes)})
		}
		pages := paginate(r)
		g.Expect(pages).To(HaveLen(tc.pages), tc.name)
		var joined bytes.Buffer
		rows := 0
		for _, p := range pages {
			g.Expect(len(p.findings)).To(BeNumerically("<=", maxPageRows), tc.name)
			g.Expect(len(p.csv)).To(BeNumerically("<=", maxPageBytes), tc.name)
			joined.Write(p.csv)
			rows += len(p.findings)
		}
		g.Expect(rows).To(Equal(tc.rows), tc.name)
		g.Expect(joined.Bytes()).To(Equal(r.CSV()), tc.name)
	}
}
