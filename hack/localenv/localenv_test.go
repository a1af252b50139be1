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
	"os"
	"path/filepath"
	"regexp"
	"testing"

	. "github.com/onsi/gomega"
)

// On a fresh control plane the first apply may meet a 503 after it
// created the namespaces and the Secrets; the second finds them
// unchanged. What is printed says they were created (make demo printed
// the last attempt alone: "namespace/payments-demo unchanged").
func TestAppliedSamplesSayWhatHappened(t *testing.T) {
	g := NewWithT(t)
	first := `namespace/payments-demo created
namespace/payments-demo-b created
secret/sandbox-credentials created
secret/sandbox-credentials created
Error from server (ServiceUnavailable): error when creating "config/samples": the server is currently unable to handle the request
`
	second := `namespace/payments-demo unchanged
namespace/payments-demo-b unchanged
secret/sandbox-credentials unchanged
secret/sandbox-credentials unchanged
paymentjob.payments.idempotency.dev/order-1001 created
paymentjob.payments.idempotency.dev/order-1001 created
paymentprovider.payments.idempotency.dev/sandbox unchanged
Warning: a warning of the API server
`
	g.Expect(appliedObjects([]string{first, second})).To(Equal(`namespace/payments-demo created
namespace/payments-demo-b created
secret/sandbox-credentials created
secret/sandbox-credentials created
paymentjob.payments.idempotency.dev/order-1001 created
paymentjob.payments.idempotency.dev/order-1001 created
paymentprovider.payments.idempotency.dev/sandbox unchanged
Warning: a warning of the API server
(applied 2 times: the API server answered 503 to the first 1 while its admission policies learnt the new CRDs' kinds; an object is shown once, with what the first attempt that changed it did)
`))
	// One attempt: its output as kubectl printed it.
	g.Expect(appliedObjects([]string{second})).To(Equal(second))
}

// The local environment installs the user roles the chart ships (its
// rbac.helpers templates), under the names config/default gives them
// (docs/security.md binds them by these names).
func TestUserRolesAreTheChartsHelpers(t *testing.T) {
	g := NewWithT(t)
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	g.Expect(assets).NotTo(BeEmpty(), "KUBEBUILDER_ASSETS names the folder of kubectl: run make test")
	root := filepath.Join("..", "..")
	names, manifest, err := userRoles(filepath.Join(assets, "kubectl"), root)
	g.Expect(err).NotTo(HaveOccurred())

	templates, err := filepath.Glob(filepath.Join(root, "dist", "chart", "templates", "rbac", "*.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	helpers := regexp.MustCompile(`(?s)\.Values\.rbac\.helpers\.enabled.*"suffix" "([a-z-]+)"`)
	var want []string
	for _, path := range templates {
		b, err := os.ReadFile(path)
		g.Expect(err).NotTo(HaveOccurred())
		if m := helpers.FindSubmatch(b); m != nil {
			want = append(want, "paymentjob-operator-"+string(m[1]))
		}
	}
	g.Expect(want).To(HaveLen(11))
	g.Expect(names).To(ConsistOf(want))
	g.Expect(names).To(ContainElements("paymentjob-operator-paymentjob-editor-role",
		"paymentjob-operator-paymentreconciliation-viewer-role"))
	g.Expect(string(manifest)).NotTo(ContainSubstring("manager-role"))
}
