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

package main

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/pkg/operator"
)

// --ledger-postgres-durability: synchronous unless told local, and nothing
// else.
func TestLedgerPostgresDurabilityFlag(t *testing.T) {
	dsnFile := filepath.Join(t.TempDir(), "dsn")
	if err := os.WriteFile(dsnFile, []byte("postgres://ledger@db/ledger\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		want    operator.LedgerDurability
		wantErr string
	}{
		{name: "the default", want: operator.DurabilitySynchronous},
		{name: "synchronous", args: []string{"--ledger-postgres-durability=synchronous"}, want: operator.DurabilitySynchronous},
		{name: "local", args: []string{"--ledger-postgres-durability=local"}, want: operator.DurabilityLocal},
		{name: "anything else", args: []string{"--ledger-postgres-durability=async"},
			wantErr: `--ledger-postgres-durability must be synchronous or local, not "async"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			fs := flag.NewFlagSet("manager", flag.ContinueOnError)
			pg := bindPostgresFlags(fs)
			g.Expect(fs.Parse(append([]string{"--ledger-postgres-dsn-file=" + dsnFile}, tt.args...))).To(Succeed())
			opts, err := pg.forBackend(string(operator.LedgerPostgres))
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(tt.wantErr))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(opts.Durability).To(Equal(tt.want))
		})
	}
}
