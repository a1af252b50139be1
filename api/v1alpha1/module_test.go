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

package v1alpha1_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// The operator's own dependencies, which a module importing the API types
// must not get: the PostgreSQL driver, the Stripe client, the Lua engine,
// the CLI framework, controller-runtime, and the operator's module itself.
var operatorOnly = []string{
	"github.com/jackc/pgx",
	"github.com/stripe/stripe-go",
	"github.com/yuin/gopher-lua",
	"github.com/spf13/cobra",
	"sigs.k8s.io/controller-runtime",
	"github.com/idempotency-dev/paymentjob-operator ",
}

// The API types are a module of their own (api/go.mod) so that a user who
// imports them gets their module graph, not the operator's: go list -m all
// in the module lists every module a user's build may select because of it.
func TestTheAPIModuleNeedsNoneOfTheOperatorsDependencies(t *testing.T) {
	g := NewWithT(t)
	goBin, err := exec.LookPath("go")
	g.Expect(err).NotTo(HaveOccurred(), "the go command lists the module graph")
	cmd := exec.Command(goBin, "list", "-m", "all")
	cmd.Dir = ".." // api/go.mod
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=readonly")
	out, err := cmd.Output()
	g.Expect(err).NotTo(HaveOccurred(), "go list -m all in api/: %s", out)

	modules := strings.Split(strings.TrimSpace(string(out)), "\n")
	g.Expect(modules[0]).To(Equal("github.com/idempotency-dev/paymentjob-operator/api"),
		"api/ is the root of a module of its own")
	for _, m := range modules {
		for _, banned := range operatorOnly {
			g.Expect(m+" ").NotTo(HavePrefix(banned), "a user importing the API types would get %s", m)
		}
	}
	t.Logf("the API types' module graph: %d modules", len(modules))
}
