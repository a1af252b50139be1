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

package cli_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The plugin is a client of the operator's public API only, as a user's
// program would be: of this module it imports api/... and pkg/...
// directly, never an internal package (pkg/ledger and pkg/providerlookup
// reuse the operator's own ledger and adapters behind their small API).
func TestThePluginImportsOnlyThePublicAPI(t *testing.T) {
	const module = "github.com/idempotency-dev/paymentjob-operator/"
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "../../cmd/kubectl-payments/main.go")
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		parsed, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			rest, ours := strings.CutPrefix(path, module)
			if !ours {
				continue
			}
			checked++
			public := strings.HasPrefix(rest, "api/") || strings.HasPrefix(rest, "pkg/") || rest == "internal/cli"
			if !public {
				t.Errorf("%s imports %s: the plugin may import only api/... and pkg/... of the operator", f, path)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no import of the operator's packages found: the test reads the wrong files")
	}
}
