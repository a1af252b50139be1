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
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// Completion: cobra's __complete, which the scripts of `kubectl payments
// completion` and kubectl's kubectl_complete-payments call, offers the
// namespace's objects as TYPE/NAME and its providers.
func TestCompletion(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t, "completion")
	createJob(t, ns, "invoice-1", 100, "", suspendedJob)
	createJob(t, ns, "invoice-2", 100, "", suspendedJob)
	createJob(t, ns, "other", 100, "", suspendedJob)
	complete := func(args ...string) []string {
		cmd := exec.Command(filepath.Join(pluginDir, "kubectl-payments"), append([]string{"__complete"}, args...)...)
		cmd.Env = append(cmd.Environ(), "KUBECONFIG="+kubeconfig)
		out, err := cmd.Output()
		g.Expect(err).NotTo(HaveOccurred())
		// The last line is cobra's directive (":4", no file completion).
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		g.Expect(lines[len(lines)-1]).To(HavePrefix(":"))
		return lines[:len(lines)-1]
	}
	g.Expect(complete("status", "-n", ns, "pj/inv")).To(Equal([]string{"pj/invoice-1", "pj/invoice-2"}))
	g.Expect(complete("approve", "-n", ns, "")).To(ContainElements("pj/invoice-1", "pj/invoice-2", "pj/other"))
	g.Expect(complete("reconcile", "-n", ns, "--provider", "")).To(Equal([]string{"stripe"}))
	g.Expect(complete("led")).To(ContainElement(HavePrefix("ledger")))

	r := kubectlPayments("completion", "bash")
	succeeded(g, r)
	g.Expect(r.Stdout).To(ContainSubstring("__start_kubectl-payments"))
}
