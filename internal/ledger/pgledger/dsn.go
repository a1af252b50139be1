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

import (
	"maps"
	"net/url"
	"slices"
	"strings"
)

// withParams returns dsn with the connection parameters set, over any value
// it gives them. A DSN is a URL (postgres://...) or libpq's keyword/value
// form; in the latter a keyword given twice takes its last value.
func withParams(dsn string, params map[string]string) string {
	keys := slices.Sorted(maps.Keys(params))
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			// Left as it is: ParseConfig refuses it, without its text.
			return dsn
		}
		q := u.Query()
		for _, k := range keys {
			q.Set(k, params[k])
		}
		u.RawQuery = q.Encode()
		return u.String()
	}
	var b strings.Builder
	b.WriteString(dsn)
	for _, k := range keys {
		b.WriteString(" " + k + "='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(params[k]) + "'")
	}
	return b.String()
}
