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

package operator

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestOptionsThatCouldChargeTwiceAreRefused: Setup refuses, before it
// touches the manager, the options that could charge twice or lose the
// record of a payment; the zero value is the manager's defaults.
func TestOptionsThatCouldChargeTwiceAreRefused(t *testing.T) {
	day := 24 * time.Hour
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"lease shorter than the call", Options{ClaimLease: 10 * time.Second, ProviderTimeout: 30 * time.Second},
			"the claim lease (10s) must be longer than the provider timeout (30s)"},
		{"lease equal to the call", Options{ClaimLease: time.Minute, ProviderTimeout: time.Minute}, "must be longer"},
		{"TTL without the ledger", Options{DisableLedger: true, TTLAfterFinished: &day}, "needs the ledger"},
		{"ledger forgets within a day", Options{LedgerRetention: time.Hour}, "at least 24h"},
		{"unknown ledger backend", Options{LedgerBackend: "mysql"}, `unknown ledger backend "mysql"`},
		{"PostgreSQL ledger without a database", Options{LedgerBackend: LedgerPostgres}, "needs a DSN"},
		{"unknown PostgreSQL durability", Options{LedgerBackend: LedgerPostgres, Postgres: PostgresLedger{DSN: "postgres://db/ledger",
			Durability: "async"}}, `unknown PostgreSQL ledger durability "async"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(Setup(nil, tt.opts)).To(MatchError(ContainSubstring(tt.want)))
		})
	}

	g := NewWithT(t)
	o, err := Options{}.complete()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(o.ClaimLease).To(Equal(DefaultClaimLease))
	g.Expect(o.ProviderTimeout).To(Equal(DefaultProviderTimeout))
	g.Expect(o.KeyRetention).To(Equal(DefaultKeyRetention))
	g.Expect(o.EtcdQuotaBytes).To(BeEquivalentTo(2<<30), "etcd's default quota")
	g.Expect(o.Holder).NotTo(BeEmpty())
	g.Expect(o.LedgerBackend).To(Equal(LedgerCRD), "the CRD ledger by default")
	never, err := Options{KeyRetention: -1}.complete()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(never.KeyRetention).To(BeZero(), "negative: never look up")
	unknown, err := Options{EtcdQuotaBytes: -1}.complete()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(unknown.EtcdQuotaBytes).To(BeZero(), "negative: the quota is unknown, exported as 0")
}
