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

package cli

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// What to ask for when RBAC denies a request: the shipped role that grants
// it, read from the verb and the resource the API server's message names.

// installPrefix is what the default install (dist/install.yaml, and the
// chart released as paymentjob-operator with rbac.helpers.enabled) puts
// before the names of config/rbac's roles.
const installPrefix = "paymentjob-operator-"

// reconciliationReader is the role that reads reconciliations and their
// reports.
const reconciliationReader = "paymentreconciliation-viewer-role"

var (
	readVerbs   = []string{"get", "list", "watch"}
	changeVerbs = []string{"create", "update", "patch", "delete"}
)

// roleGrant is a role of config/rbac and the verbs it grants on a resource.
type roleGrant struct {
	role  string
	verbs []string
}

// shippedRoles are config/rbac's user roles by the resource of
// payments.idempotency.dev they grant, the least first; view says the
// reading role is aggregated into the built-in view role.
// TestDeniedRequestsNameTheRolesOfConfigRBAC holds them to config/rbac.
var shippedRoles = map[string]struct {
	grants []roleGrant
	view   bool
}{
	"paymentjobs":      {grants: objectRoles("paymentjob"), view: true},
	"paymentrefunds":   {grants: objectRoles("paymentrefund"), view: true},
	"paymentproviders": {grants: objectRoles("paymentprovider"), view: true},
	"paymentreconciliations": {grants: []roleGrant{
		{reconciliationReader, readVerbs},
		{"paymentreconciliation-editor-role", []string{"create", "delete"}},
	}},
	"paymentreconciliations/status": {grants: []roleGrant{{reconciliationReader, readVerbs}}},
	"paymentreconciliationreports":  {grants: []roleGrant{{reconciliationReader, readVerbs}}},
}

// objectRoles are the viewer, editor and admin roles of kind.
func objectRoles(kind string) []roleGrant {
	return []roleGrant{
		{kind + "-viewer-role", readVerbs},
		{kind + "-editor-role", changeVerbs},
		{kind + "-admin-role", []string{"deletecollection"}},
	}
}

// rolesFor are the installed names of the least roles that grant verb on
// resource of group, with view when it grants it too; none when no
// shipped role does.
func rolesFor(group, resource, verb string) []string {
	if group == "" && resource == "events" && slices.Contains(readVerbs, verb) {
		return []string{"view"}
	}
	if group != paymentsGroup {
		return nil
	}
	shipped := shippedRoles[resource]
	for _, g := range shipped.grants {
		if !slices.Contains(g.verbs, verb) {
			continue
		}
		roles := []string{installPrefix + g.role}
		if shipped.view && slices.Contains(readVerbs, verb) {
			roles = append(roles, "view")
		}
		return roles
	}
	return nil
}

// deniedRE reads the API server's message of a denial (apiserver's
// forbiddenMessage): verb, resource[/subresource], API group, namespace.
var deniedRE = regexp.MustCompile(`cannot (\S+) resource "([^"]+)" in API group "([^"]*)"(?: in the namespace "([^"]+)")?`)

// askFor says which role to ask the cluster's admin for, from the
// message of a Forbidden error.
func askFor(message string) string {
	m := deniedRE.FindStringSubmatch(message)
	if m == nil {
		return "ask your admin for the role docs/security.md names for this command"
	}
	verb, resource, group, ns := m[1], m[2], m[3], m[4]
	where := "with a ClusterRoleBinding"
	if ns != "" {
		where = "in namespace " + ns
	}
	if roles := rolesFor(group, resource, verb); len(roles) > 0 {
		return fmt.Sprintf("ask your admin to bind ClusterRole %s (%s %s) %s", strings.Join(roles, " or "), verb, resource, where)
	}
	switch {
	case group == paymentsGroup && resource == "paymentledgers":
		return fmt.Sprintf("no shipped role grants %s paymentledgers: ask your admin for a ClusterRole with %s on paymentledgers, "+
			"bound with a ClusterRoleBinding (the ledger holds every namespace's payments)", verb, verb)
	case group == "" && resource == "secrets":
		return fmt.Sprintf("no shipped role grants %s secrets: ask your admin for a Role with %s on that one Secret (resourceNames) %s",
			verb, verb, where)
	}
	return fmt.Sprintf("no shipped role grants %s %s: ask your admin (docs/security.md lists the roles)", verb, resource)
}
