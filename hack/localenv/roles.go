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
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// The user roles: the ClusterRoles of config/rbac that people are bound
// to (docs/security.md), under the names config/default and the chart give
// them, so that the RBAC of the docs can be tried locally. The manager's
// own roles are not installed: the local manager runs as the administrator.

// userRoleSuffixes end the names of the user roles: the viewer, editor and
// admin roles of PaymentJobs, PaymentRefunds and PaymentProviders, and the
// reconciliation roles.
var userRoleSuffixes = []string{"-viewer-role", "-editor-role", "-admin-role"}

// userRoles renders config/default with kubectl's kustomize and returns
// its user roles as YAML documents, sorted by name.
func userRoles(kubectl, root string) (names []string, manifest []byte, err error) {
	var stderr bytes.Buffer
	cmd := exec.Command(kubectl, "kustomize", filepath.Join(root, "config", "default"))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("kubectl kustomize config/default: %w\n%s", err, stderr.String())
	}
	roles := map[string][]byte{}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		var obj unstructured.Unstructured
		if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, nil, fmt.Errorf("cannot read config/default: %w", err)
		}
		if obj.GetKind() != "ClusterRole" || !slices.ContainsFunc(userRoleSuffixes, func(s string) bool {
			return strings.HasSuffix(obj.GetName(), s)
		}) {
			continue
		}
		b, err := yaml.Marshal(obj.Object)
		if err != nil {
			return nil, nil, err
		}
		roles[obj.GetName()] = b
	}
	for name := range roles {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		manifest = append(append(manifest, "---\n"...), roles[name]...)
	}
	return names, manifest, nil
}

// installUserRoles applies the user roles, from a file of the work folder.
func (e *localEnv) installUserRoles() error {
	names, manifest, err := userRoles(filepath.Join(e.assets, "kubectl"), e.root)
	if err != nil {
		return err
	}
	path := filepath.Join(e.work, "user-roles.yaml")
	if err := os.WriteFile(path, manifest, 0o644); err != nil {
		return err
	}
	if _, err := e.kubectl("apply", "-f", path); err != nil {
		return err
	}
	step("Installed the user roles of config/rbac, named as config/default names them (%s): %s",
		rel(e.root, path), strings.Join(names, ", "))
	return nil
}
