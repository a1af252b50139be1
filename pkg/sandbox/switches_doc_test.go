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

package sandbox

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// switchBodies are the /_sandbox routes of NewServer and the type each
// decodes its JSON body into (nil: no body).
var switchBodies = map[string]any{
	"/_sandbox/stats":                nil,
	"/_sandbox/books":                nil,
	"/_sandbox/faults":               faultsBody{},
	"/_sandbox/forget-keys":          nil,
	"/_sandbox/lookup":               lookupBody{},
	"/_sandbox/refunds":              refundControlBody{},
	"/_sandbox/refunds/{id}/fail":    failRefundBody{},
	"/_sandbox/intents/{id}":         putIntentBody{},
	"/_sandbox/intents/{id}/status":  statusBody{},
	"/_sandbox/intents/{id}/dispute": disputeRequestBody{},
	"/_sandbox/disputes/{id}/status": statusBody{},
	"/_sandbox/debits":               debitsBody{},
	"/_sandbox/webhooks":             webhooksPut{},
}

// docs/testing.md, "The running sandbox's switches", names every /_sandbox
// route of server.go, and each JSON field of its body in the route's row,
// as `field`: a switch added or renamed without the doc fails here.
func TestSandboxSwitchesAreDocumented(t *testing.T) {
	g := NewWithT(t)
	source, err := os.ReadFile("server.go")
	g.Expect(err).NotTo(HaveOccurred())
	handles := regexp.MustCompile(`mux\.Handle\("(/_sandbox/[^"]*)"`).FindAllStringSubmatch(string(source), -1)
	routes := make([]string, 0, len(handles))
	for _, m := range handles {
		routes = append(routes, m[1])
	}
	g.Expect(routes).To(ConsistOf(mapKeys(switchBodies)), "a /_sandbox route of server.go has no entry in switchBodies, or one is gone")

	doc, err := os.ReadFile("../../docs/testing.md")
	g.Expect(err).NotTo(HaveOccurred())
	_, section, found := strings.Cut(string(doc), "\n## The running sandbox's switches\n")
	g.Expect(found).To(BeTrue(), `docs/testing.md has no section "The running sandbox's switches"`)
	section, _, _ = strings.Cut(section, "\n## ")

	for route, body := range switchBodies {
		var rows []string
		for _, line := range strings.Split(section, "\n") {
			if strings.HasPrefix(line, "| `") && strings.Contains(line, " "+route+"` |") {
				rows = append(rows, line)
			}
		}
		g.Expect(rows).NotTo(BeEmpty(), "docs/testing.md has no row of %s", route)
		if body == nil {
			continue
		}
		typ := reflect.TypeOf(body)
		for i := range typ.NumField() {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			g.Expect(strings.Join(rows, "\n")).To(ContainSubstring("`"+name+"`"),
				"the row of %s in docs/testing.md does not name the JSON field %s (%s.%s)", route, name, typ.Name(), typ.Field(i).Name)
		}
	}
}

func mapKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}
