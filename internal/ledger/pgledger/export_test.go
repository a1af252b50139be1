//go:build postgres

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

package pgledger

import "context"

// Queued is how many entries wait for a statement, not counting those of
// the statement in flight.
func Queued(l *Ledger) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, b := range l.queue {
		n += len(b.Entries)
	}
	return n
}

// SessionSetting is the value of a run-time setting in a session of l.
func SessionSetting(ctx context.Context, l *Ledger, name string) (string, error) {
	var v string
	err := l.pool.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v)
	return v, err
}
