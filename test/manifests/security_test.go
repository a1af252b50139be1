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

// What lets many tenants share the operator, as docs/security.md promises
// it: the manager alone may read Secrets, and it only reads them; and the
// RBAC table of docs/security.md matches the shipped roles, row for row,
// read by the parser and compared by compareRBAC below. The egress
// NetworkPolicy is checked in networkpolicy_test.go.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
)

// securityCases check access to Secrets and the RBAC table of
// docs/security.md; they are part of baseCases.
func securityCases() []testCase {
	return []testCase{
		// The manager reads Secrets through a cache that lists and watches
		// only those labelled payments.idempotency.dev/credentials: "true".
		// RBAC cannot restrict a list to a label, so list and watch on
		// every Secret is the least it can be given. It never gets one by
		// name (so no get, which would let a read by name bypass the
		// label) and never writes one.
		{"manager ClusterRole reads Secrets with list and watch only", func(g Gomega, m *manifest) {
			rules := m.clusterRoleRules(g, managerRoleName)
			g.Expect(grantedVerbs(rules, "", "secrets")).To(ConsistOf("list", "watch"),
				"%s: ClusterRole %s must grant exactly list and watch on secrets (the label-selected credentials cache)",
				m.source, managerRoleName)
			for _, r := range rules {
				if slices.Contains(r.Resources, "secrets") {
					g.Expect(r.ResourceNames).To(BeEmpty(), "%s: ClusterRole %s limits secrets to names %v; the cache lists them all",
						m.source, managerRoleName, r.ResourceNames)
				}
			}
		}},
		{"no role but the manager's grants anything on secrets", func(g Gomega, m *manifest) {
			for name, rules := range m.allRoleRules(g) {
				if name == "ClusterRole "+managerRoleName {
					continue
				}
				g.Expect(grantedVerbs(rules, "", "secrets")).To(BeEmpty(),
					"%s: %s grants verbs on secrets; only the manager reads them, and only the labelled ones", m.source, name)
			}
		}},
		{"the RBAC table of docs/security.md matches the roles", func(g Gomega, m *manifest) {
			root, err := findRepoRoot()
			g.Expect(err).NotTo(HaveOccurred())
			path := filepath.Join(root, securityDoc)
			data, err := os.ReadFile(path)
			g.Expect(err).NotTo(HaveOccurred(), "cannot read %s, which documents the RBAC of every shipped role", path)
			table, err := parseRBACTable(string(data))
			g.Expect(err).NotTo(HaveOccurred(), "%s: cannot read its RBAC table", path)
			g.Expect(compareRBAC(m.roleGrants(g), table)).To(BeEmpty(),
				"%s: the RBAC table of %s does not match the rendered roles; fix the table or config/rbac", m.source, securityDoc)
		}},
	}
}

// rbacTableHeader are the first columns of the RBAC table in docs/security.md;
// further columns are prose.
var rbacTableHeader = []string{"kind", "role", "API group", "resource", "verbs"}

// rbacEntry is one resource (or non-resource URL, which starts with "/") of
// one API group in one role: "ClusterRole paymentjob-operator-manager-role".
type rbacEntry struct {
	role, group, resource string
}

func (e rbacEntry) String() string {
	switch {
	case strings.HasPrefix(e.resource, "/"):
		return fmt.Sprintf("%s on the URL %s", e.role, e.resource)
	case e.group == "":
		return fmt.Sprintf("%s on %s (core)", e.role, e.resource)
	default:
		return fmt.Sprintf("%s on %s (%s)", e.role, e.resource, e.group)
	}
}

// rbacTable is what docs/security.md says: the roles it lists, and the
// verbs of each entry (none for a row whose verbs are "—").
type rbacTable struct {
	roles map[string]bool
	verbs map[rbacEntry][]string
}

// parseRBACTable reads the markdown table whose header starts with
// rbacTableHeader. A row is `| kind | role | API group | resource | verbs | ... |`:
// kind is Role or ClusterRole; role is the name in config/rbac, without the
// name prefix; API group is a comma list of groups, "core" for the core
// group, or "—" for non-resource URLs; resource a comma list of resources
// or URLs; verbs a comma list, or "—" for none. Backticks are ignored.
func parseRBACTable(doc string) (*rbacTable, error) {
	lines := strings.Split(doc, "\n")
	start := -1
	for i, line := range lines {
		cells := tableCells(line)
		if len(cells) >= len(rbacTableHeader) && slices.Equal(cells[:len(rbacTableHeader)], rbacTableHeader) {
			if start >= 0 {
				return nil, fmt.Errorf("two tables start with the columns %v (lines %d and %d)", rbacTableHeader, start+1, i+1)
			}
			start = i
		}
	}
	if start < 0 {
		return nil, fmt.Errorf("no table starts with the columns %v", rbacTableHeader)
	}
	if start+1 >= len(lines) || !strings.HasPrefix(strings.TrimSpace(lines[start+1]), "|---") {
		return nil, fmt.Errorf("line %d: the header of the table is not followed by its |---| line", start+1)
	}
	t := &rbacTable{roles: map[string]bool{}, verbs: map[rbacEntry][]string{}}
	for i := start + 2; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
		cells := tableCells(lines[i])
		if len(cells) < len(rbacTableHeader) {
			return nil, fmt.Errorf("line %d: want at least %d cells, have %d", i+1, len(rbacTableHeader), len(cells))
		}
		kind, name := cells[0], cells[1]
		if kind != "Role" && kind != "ClusterRole" {
			return nil, fmt.Errorf("line %d: kind %q is neither Role nor ClusterRole", i+1, kind)
		}
		role := kind + " " + namePrefix + name
		t.roles[role] = true
		groups := []string{""}
		if cells[2] != "—" {
			groups = splitList(cells[2])
			for j, grp := range groups {
				if grp == "core" {
					groups[j] = ""
				}
			}
		}
		var verbs []string
		if cells[4] != "—" {
			verbs = splitList(cells[4])
		}
		for _, grp := range groups {
			for _, res := range splitList(cells[3]) {
				if strings.HasPrefix(res, "/") != (cells[2] == "—") {
					return nil, fmt.Errorf("line %d: %s: a URL goes with the API group —, a resource with a group", i+1, res)
				}
				e := rbacEntry{role: role, group: grp, resource: res}
				if _, dup := t.verbs[e]; dup {
					return nil, fmt.Errorf("line %d: a second row for %s", i+1, e)
				}
				t.verbs[e] = verbs
			}
		}
	}
	return t, nil
}

// tableCells splits a markdown table row into its trimmed cells, without
// backticks; a line that is not a row has none.
func tableCells(line string) []string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") || !strings.HasSuffix(line, "|") || len(line) < 2 {
		return nil
	}
	cells := strings.Split(line[1:len(line)-1], "|")
	for i, c := range cells {
		cells[i] = strings.TrimSpace(strings.ReplaceAll(c, "`", ""))
	}
	return cells
}

func splitList(cell string) []string {
	var out []string
	for item := range strings.SplitSeq(cell, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// roleGrants maps each rendered Role and ClusterRole ("Kind name") to the
// verbs of each of its entries, as its rules write them.
func (m *manifest) roleGrants(g Gomega) map[string]map[rbacEntry][]string {
	out := map[string]map[rbacEntry][]string{}
	for role, rules := range m.allRoleRules(g) {
		entries := map[rbacEntry][]string{}
		add := func(e rbacEntry, verbs []string) {
			for _, v := range verbs {
				if !slices.Contains(entries[e], v) {
					entries[e] = append(entries[e], v)
				}
			}
		}
		for _, r := range rules {
			g.Expect(r.ResourceNames).To(BeEmpty(),
				"%s: %s limits a rule to resourceNames %v, which the RBAC table of %s cannot say; extend the table",
				m.source, role, r.ResourceNames, securityDoc)
			for _, url := range r.NonResourceURLs {
				add(rbacEntry{role: role, resource: url}, r.Verbs)
			}
			for _, grp := range r.APIGroups {
				for _, res := range r.Resources {
					add(rbacEntry{role: role, group: grp, resource: res}, r.Verbs)
				}
			}
		}
		out[role] = entries
	}
	return out
}

// compareRBAC lists every difference between the rendered roles and the
// table: a role missing from it or not shipped, an entry missing, verbs that
// differ, and a "—" row that the rules do grant (through a wildcard too).
func compareRBAC(rendered map[string]map[rbacEntry][]string, table *rbacTable) []string {
	var problems []string
	for role, entries := range rendered {
		if !table.roles[role] {
			problems = append(problems, fmt.Sprintf("%s is not in the table", role))
			continue
		}
		for e, verbs := range entries {
			documented, ok := table.verbs[e]
			switch {
			case !ok:
				problems = append(problems, fmt.Sprintf("%s: no row; the role grants %s", e, verbList(verbs)))
			case !sameVerbs(documented, verbs):
				problems = append(problems, fmt.Sprintf("%s: the table says %s; the role grants %s", e, verbList(documented), verbList(verbs)))
			}
		}
	}
	rules := map[string][]rbacv1.PolicyRule{}
	for role, entries := range rendered {
		for e, verbs := range entries {
			r := rbacv1.PolicyRule{Verbs: verbs}
			if strings.HasPrefix(e.resource, "/") {
				r.NonResourceURLs = []string{e.resource}
			} else {
				r.APIGroups, r.Resources = []string{e.group}, []string{e.resource}
			}
			rules[role] = append(rules[role], r)
		}
	}
	for role := range table.roles {
		if _, ok := rendered[role]; !ok {
			problems = append(problems, fmt.Sprintf("%s is in the table but not shipped", role))
		}
	}
	for e, documented := range table.verbs {
		entries, shipped := rendered[e.role]
		if !shipped {
			continue
		}
		if _, ok := entries[e]; ok {
			continue // compared above
		}
		var granted []string
		if !strings.HasPrefix(e.resource, "/") {
			granted = grantedVerbs(rules[e.role], e.group, e.resource)
		}
		if len(documented) > 0 || len(granted) > 0 {
			problems = append(problems, fmt.Sprintf("%s: the table says %s; the role grants %s", e, verbList(documented), verbList(granted)))
		}
	}
	slices.Sort(problems)
	return problems
}

func sameVerbs(a, b []string) bool {
	a, b = slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b))
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

func verbList(verbs []string) string {
	if len(verbs) == 0 {
		return "nothing"
	}
	return strings.Join(slices.Sorted(slices.Values(verbs)), ", ")
}
