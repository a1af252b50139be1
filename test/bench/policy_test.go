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
	"testing"

	. "github.com/onsi/gomega"
)

func TestReadPoliciesReadsConfigPolicy(t *testing.T) {
	g := NewWithT(t)
	objs, err := readPolicies(filepath.Join("..", "..", "config", "policy"))
	g.Expect(err).NotTo(HaveOccurred())
	kinds := map[string]string{}
	for _, u := range objs {
		kinds[u.GetKind()+"/"+u.GetName()] = u.GetAPIVersion()
	}
	g.Expect(kinds).To(HaveKey("MutatingAdmissionPolicy/outcome-guard-at-create"), "the policy that adds the finalizer at create")
	g.Expect(kinds).To(HaveKey("MutatingAdmissionPolicyBinding/outcome-guard-at-create"))
	g.Expect(kinds).NotTo(HaveKey(HavePrefix("Kustomization")), "kustomize's files are not objects")
}

func TestParseObjects(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		want    []string
		wantErr string
	}{
		{name: "two documents and a comment", yaml: "# a comment only\n---\napiVersion: v1\nkind: A\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: B\nmetadata:\n  name: b\n",
			want: []string{"A/a", "B/b"}},
		{name: "comments only", yaml: "# nothing\n", want: nil},
		{name: "not an object", yaml: "resources:\n- a.yaml\n", wantErr: "without apiVersion"},
		{name: "invalid", yaml: "apiVersion: [\n", wantErr: "yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			objs, err := parseObjects([]byte(tt.yaml))
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			var got []string
			for _, u := range objs {
				got = append(got, u.GetKind()+"/"+u.GetName())
			}
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestReadPoliciesWithoutAny(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("resources: []\n"), 0o600)).To(Succeed())
	_, err := readPolicies(dir)
	g.Expect(err).To(MatchError(ContainSubstring("no admission policy")))
}
