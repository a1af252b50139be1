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

package paymentjobtest_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestDocsAreTheExample: every snippet of docs/testing.md (and the
// conformance one of docs/conformance.md) marked in examples/billing
// (between "// docs:start NAME" and "// docs:end NAME") stands in the doc
// exactly as in the example, which .ci/run tests.
func TestDocsAreTheExample(t *testing.T) {
	g := NewWithT(t)
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "testing.md"))
	g.Expect(err).NotTo(HaveOccurred())
	conformance, err := os.ReadFile(filepath.Join("..", "..", "docs", "conformance.md"))
	g.Expect(err).NotTo(HaveOccurred())
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "billing", "*_test.go"))
	g.Expect(err).NotTo(HaveOccurred())
	more, err := filepath.Glob(filepath.Join("..", "..", "examples", "billing", "*", "*_test.go"))
	g.Expect(err).NotTo(HaveOccurred())
	files = append(files, more...)
	marked := regexp.MustCompile(`(?s)// docs:start (\w+)\n(.*?)\n// docs:end (\w+)`)
	found := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		g.Expect(err).NotTo(HaveOccurred())
		for _, m := range marked.FindAllStringSubmatch(string(src), -1) {
			g.Expect(m[3]).To(Equal(m[1]), "%s: docs:start %s ends with docs:end %s", f, m[1], m[3])
			snippet := "```go\n" + strings.Trim(m[2], "\n") + "\n```"
			g.Expect(string(doc)).To(ContainSubstring(snippet), "docs/testing.md lacks snippet %q of %s, or it differs", m[1], f)
			if m[1] == "conformance" {
				g.Expect(string(conformance)).To(ContainSubstring(snippet), "docs/conformance.md lacks snippet %q of %s, or it differs", m[1], f)
			}
			found++
		}
	}
	g.Expect(found).To(BeNumerically(">=", 5), "the snippets of examples/billing")
}
