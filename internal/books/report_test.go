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

package books_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/books"
)

func seededReport() books.Report {
	b, _ := seeded(40)
	return books.Report{
		Provider: "billing/stripe", Listed: true,
		From: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), To: time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC),
		Findings: books.Compare(b.records, b.objects),
	}
}

func TestCSVReportHasStableColumnsAndOneRowAFinding(t *testing.T) {
	g := NewWithT(t)
	r := seededReport()
	rows, err := csv.NewReader(bytes.NewReader(r.CSV())).ReadAll()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rows[0]).To(Equal([]string{
		"category", "kind", "key", "object", "in_ledger", "cluster_id", "cluster_amount", "cluster_currency",
		"provider_ids", "provider_amount", "provider_currency", "detail", "action",
		"charge_object", "charge_in_ledger", "charge_id", "charge_left", "object_deleted", "charge_object_deleted",
	}), "the old columns keep their order; new ones come at the end")
	g.Expect(rows).To(HaveLen(len(r.Findings) + 1))
	for _, row := range rows[1:] {
		if row[0] == string(books.Duplicate) && row[1] == "charge" {
			g.Expect(row[2:11]).To(Equal([]string{"order-0004", "billing/order-0004", "true", "pi_order-0004", "1004", "EUR",
				"pi_order-0004 pi_order-0004-again", "", ""}))
			g.Expect(row[13:]).To(Equal([]string{"billing/order-0004", "true", "pi_order-0004", "1004", "false", "false"}))
		}
	}
}

func TestJSONReportCarriesTheCountsAndEveryFinding(t *testing.T) {
	g := NewWithT(t)
	r := seededReport()
	var got struct {
		Provider string                 `json:"provider"`
		Listed   bool                   `json:"listed"`
		Counts   map[books.Category]int `json:"counts"`
		Findings []books.Finding        `json:"findings"`
	}
	g.Expect(json.Unmarshal(r.JSON(), &got)).To(Succeed())
	g.Expect(got.Provider).To(Equal("billing/stripe"))
	g.Expect(got.Listed).To(BeTrue())
	g.Expect(got.Findings).To(Equal(r.Findings))
	g.Expect(got.Counts).To(Equal(r.Counts()))
	g.Expect(got.Counts).To(HaveLen(len(books.Categories)), "every category, zero or not")
	g.Expect(got.Counts[books.UnknownToCluster]).To(Equal(3))
	g.Expect(r.Discrepancies()).To(Equal(len(r.Findings) - got.Counts[books.Matched]))
}

func TestSHA256IsTheCSVReportsAndChangesWithAnyFinding(t *testing.T) {
	g := NewWithT(t)
	r := seededReport()
	sum := sha256.Sum256(r.CSV())
	g.Expect(r.SHA256()).To(Equal(hex.EncodeToString(sum[:])))
	g.Expect(seededReport().SHA256()).To(Equal(r.SHA256()), "the same books, the same report")

	changed := seededReport()
	changed.Findings[len(changed.Findings)-1].ProviderAmount++
	g.Expect(changed.SHA256()).NotTo(Equal(r.SHA256()))
}
