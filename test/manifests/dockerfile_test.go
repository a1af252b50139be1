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

package manifests_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// The image ships the plugin beside the manager: the builder stage builds
// it (static, with the release's version) from sources it copies, and the
// final stage carries it at /kubectl-payments, its entrypoint still the
// manager. No container engine runs here: this reads the Dockerfile.
func TestImageCarriesThePlugin(t *testing.T) {
	g := NewWithT(t)
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "Dockerfile"))
	g.Expect(err).NotTo(HaveOccurred())
	builder, final, found := strings.Cut(string(b), "\nFROM gcr.io/distroless/static:nonroot")
	g.Expect(found).To(BeTrue(), "the final stage is distroless")
	for _, dir := range []string{"cmd/", "api/", "internal/", "pkg/"} {
		g.Expect(builder).To(ContainSubstring("COPY "+dir+" "+dir), "the plugin's sources include %s", dir)
	}
	g.Expect(builder).To(MatchRegexp(`(?s)RUN CGO_ENABLED=0 [^\n]*go build -trimpath \\\s*\n\s*-ldflags "-s -w -X main.version=\$\{VERSION\}" -o kubectl-payments ./cmd/kubectl-payments`))
	g.Expect(final).To(ContainSubstring("COPY --from=builder /workspace/kubectl-payments /kubectl-payments"))
	g.Expect(regexp.MustCompile(`ENTRYPOINT \["/manager"\]\s*$`).MatchString(final)).To(BeTrue(), "the entrypoint stays the manager")
}
