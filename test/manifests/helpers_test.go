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

// Rendering and reading manifests: the repository root, the kustomize
// binary, the opt-in overlay, parsing a YAML stream into objects, finding
// objects in it, and reading the manager's flags.

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// manifest is one rendered set of objects.
type manifest struct {
	source string
	objs   []*unstructured.Unstructured
}

// repoRoot is the module root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := findRepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func findRepoRoot() (string, error) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return "", fmt.Errorf("cannot resolve the repository root: %w", err)
	}
	if _, err := os.Stat(filepath.Join(root, "config", "default", "kustomization.yaml")); err != nil {
		return "", fmt.Errorf("%s does not look like the repository root (no config/default/kustomization.yaml): %w", root, err)
	}
	return root, nil
}

// kustomize is the binary named by KUSTOMIZE. A missing binary fails the
// test: these checks guard the security of every install and must not be
// silently skipped.
func kustomize(t *testing.T) string {
	t.Helper()
	bin := os.Getenv(kustomizeEnv)
	if bin == "" {
		t.Fatalf("%s is not set: run `make kustomize` and set %s to the binary (for example %s=$PWD/bin/kustomize)",
			kustomizeEnv, kustomizeEnv, kustomizeEnv)
	}
	if !strings.ContainsRune(bin, filepath.Separator) && !strings.Contains(bin, "/") {
		path, err := exec.LookPath(bin)
		if err != nil {
			t.Fatalf("%s=%q: the kustomize binary is not on PATH (run `make kustomize`): %v", kustomizeEnv, bin, err)
		}
		bin = path
	}
	bin = resolve(t, bin)
	info, err := os.Stat(bin)
	if err != nil {
		t.Fatalf("%s=%q: the kustomize binary is missing (run `make kustomize`): %v", kustomizeEnv, bin, err)
	}
	if info.IsDir() || info.Mode().Perm()&0o111 == 0 {
		t.Fatalf("%s=%q is not an executable file", kustomizeEnv, bin)
	}
	return bin
}

// resolve makes a path from the environment absolute. `go test` runs in
// this package's directory while make runs in the repository root, so a
// relative path that does not exist here is taken from the repository root.
func resolve(t *testing.T, path string) string {
	t.Helper()
	if filepath.IsAbs(path) {
		return path
	}
	if _, err := os.Stat(path); err == nil {
		abs, err := filepath.Abs(path)
		if err != nil {
			t.Fatalf("cannot resolve %s: %v", path, err)
		}
		return abs
	}
	return filepath.Join(repoRoot(t), path)
}

// render runs `kustomize build dir` and parses its output.
func render(t *testing.T, dir string) *manifest {
	t.Helper()
	bin := kustomize(t)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, "build", dir)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s build %s failed: %v\n%s", bin, dir, err, stderr.String())
	}
	return parse(t, "kustomize build "+dir, stdout.Bytes())
}

// optInOverlay writes a kustomization into a temporary directory that adds
// config/prometheus and config/network-policy to config/default, with the
// namespace and name prefix of config/default, so that the opt-in objects
// come out as uncommenting them in config/default would make them.
// kustomize refuses absolute paths to kustomization directories ("new root
// cannot be absolute"), so the real folders are referenced by their
// absolute location made relative to the temporary directory.
func optInOverlay(t *testing.T, root string) string {
	t.Helper()
	defaults := readKustomization(t, filepath.Join(root, "config", "default", "kustomization.yaml"))
	ns, _ := defaults["namespace"].(string)
	prefix, _ := defaults["namePrefix"].(string)
	if ns != namespace || prefix != namePrefix {
		t.Fatalf("config/default/kustomization.yaml sets namespace %q and namePrefix %q; want %q and %q",
			ns, prefix, namespace, namePrefix)
	}

	dir := t.TempDir()
	optIn := filepath.Join(dir, "opt-in")
	if err := os.Mkdir(optIn, 0o755); err != nil {
		t.Fatal(err)
	}
	ref := func(from, folder string) string {
		abs := filepath.Join(root, "config", folder)
		rel, err := filepath.Rel(from, abs)
		if err != nil {
			t.Fatalf("cannot reference %s from %s: %v", abs, from, err)
		}
		return filepath.ToSlash(rel)
	}
	write := func(path, content string) {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(optIn, "kustomization.yaml"), fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: %s
namePrefix: %s
resources:
- %s
- %s
`, ns, prefix, ref(optIn, "prometheus"), ref(optIn, "network-policy")))
	write(filepath.Join(dir, "kustomization.yaml"), fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- %s
- opt-in
`, ref(dir, "default")))
	return dir
}

func readKustomization(t *testing.T, path string) map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("cannot read %s: %v", path, err)
	}
	defer func() { _ = f.Close() }()
	var k map[string]any
	if err := utilyaml.NewYAMLOrJSONDecoder(f, 4096).Decode(&k); err != nil {
		t.Fatalf("cannot parse %s: %v", path, err)
	}
	return k
}

// parse splits a multi-document YAML stream into objects. Each document
// goes through JSON into Unstructured, so that numbers are int64 as the API
// server would see them.
func parse(t *testing.T, source string, data []byte) *manifest {
	t.Helper()
	m := &manifest{source: source}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for i := 0; ; i++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: cannot read document %d: %v", source, i, err)
		}
		js, err := utilyaml.ToJSON(doc)
		if err != nil {
			t.Fatalf("%s: document %d is not valid YAML: %v", source, i, err)
		}
		if trimmed := bytes.TrimSpace(js); len(trimmed) == 0 || bytes.Equal(trimmed, []byte("null")) {
			continue // an empty document
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			t.Fatalf("%s: document %d is not a Kubernetes object: %v\n%s", source, i, err, doc)
		}
		if u.GetName() == "" {
			t.Fatalf("%s: document %d (%s) has no name", source, i, u.GetKind())
		}
		m.objs = append(m.objs, u)
	}
	if len(m.objs) == 0 {
		t.Fatalf("%s: no objects rendered", source)
	}
	return m
}

func (m *manifest) byKind(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range m.objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}

func (m *manifest) find(kind, name string) *unstructured.Unstructured {
	for _, o := range m.byKind(kind) {
		if o.GetName() == name {
			return o
		}
	}
	return nil
}

func (m *manifest) get(g Gomega, kind, name string) *unstructured.Unstructured {
	o := m.find(kind, name)
	g.Expect(o).NotTo(BeNil(), "%s: %s %s is missing from the output", m.source, kind, name)
	return o
}

func (m *manifest) convert(g Gomega, u *unstructured.Unstructured, into any) {
	err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, into, true)
	g.Expect(err).NotTo(HaveOccurred(), "%s: %s %s does not match its schema", m.source, u.GetKind(), u.GetName())
}

func (m *manifest) typed(g Gomega, kind, name string, into any) {
	m.convert(g, m.get(g, kind, name), into)
}

func (m *manifest) deployment(g Gomega) *appsv1.Deployment {
	g.Expect(m.byKind("Deployment")).To(HaveLen(1), "%s: want exactly one Deployment, the manager", m.source)
	var d appsv1.Deployment
	m.typed(g, "Deployment", deploymentName, &d)
	return &d
}

func (m *manifest) managerContainer(g Gomega) corev1.Container {
	cs := m.deployment(g).Spec.Template.Spec.Containers
	i := slices.IndexFunc(cs, func(c corev1.Container) bool { return c.Name == containerName })
	g.Expect(i).NotTo(Equal(-1), "%s: Deployment %s is missing the %q container", m.source, deploymentName, containerName)
	return cs[i]
}

// flagValue finds a flag of the manager in args the way the flag package
// reads them: -name or --name, then =value; a bare boolean flag is "true",
// a bare other flag takes the next argument. The last occurrence wins.
func flagValue(args []string, name string, isBool bool) (value string, found bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			break
		}
		trimmed := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if trimmed == a {
			continue
		}
		switch {
		case trimmed == name && isBool:
			value, found = "true", true
		case trimmed == name && i+1 < len(args):
			value, found = args[i+1], true
			i++
		default:
			if v, ok := strings.CutPrefix(trimmed, name+"="); ok {
				value, found = v, true
			}
		}
	}
	return value, found
}
