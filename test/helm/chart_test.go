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

// Package helm tests dist/chart with the Helm SDK: it lints, renders with
// the defaults and with every value set, refuses wrong values by their path,
// keeps the security settings and RBAC of dist/install.yaml, is accepted by
// the API server (server-side dry run against the self-built control plane),
// and installs, upgrades and uninstalls there without deleting the CRDs.
//
// make helm-test runs it with CHART, INSTALLER and KUBEBUILDER_ASSETS set.
package helm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// kubeVersion is the version of the self-built control plane
// (ENVTEST_K8S_VERSION of the Makefile), which renders check the chart's
// kubeVersion against, as `helm template --kube-version` does.
var kubeVersion = &common.KubeVersion{Version: "v1.37.2", Major: "1", Minor: "37"}

// The release the tests render and install.
const (
	releaseName      = "paymentjob-operator"
	releaseNamespace = "paymentjob-operator-system"
)

// mustEnv returns an environment variable that make helm-test sets; its
// absence fails the test rather than skipping it.
func mustEnv(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set: run make helm-test", name)
	}
	return v
}

// chartDir is dist/chart.
func chartDir(t *testing.T) string { return mustEnv(t, "CHART") }

// loadChart loads dist/chart.
func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir(t))
	if err != nil {
		t.Fatalf("load %s: %v", chartDir(t), err)
	}
	return ch
}

// everyValue reads testdata/every-value.yaml, which make helm-lint lints too:
// every value of the chart set away from its default.
func everyValue(t *testing.T) map[string]any {
	t.Helper()
	const name = "every-value.yaml"
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]any{}
	if err := yaml.Unmarshal(b, &vals); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return vals
}

// valueSet is a named set of values.
type valueSet struct {
	name string
	vals map[string]any
}

// valueSets are the two the tests render: the defaults, and every value set
// (everyValue).
func valueSets(t *testing.T) []valueSet {
	return []valueSet{{name: "defaults", vals: map[string]any{}}, {name: "every value", vals: everyValue(t)}}
}

// render renders the chart as `helm template` does, with the CRDs, and
// returns its objects. An error is the chart's: a schema refusal or a
// template's fail.
func render(t *testing.T, vals map[string]any) ([]*unstructured.Unstructured, string, error) {
	t.Helper()
	return renderChart(loadChart(t), vals)
}

// renderChart renders a loaded chart as render does.
func renderChart(ch *chart.Chart, vals map[string]any) ([]*unstructured.Unstructured, string, error) {
	install := action.NewInstall(action.NewConfiguration())
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName = releaseName
	install.Namespace = releaseNamespace
	install.Replace = true
	install.IncludeCRDs = true
	install.KubeVersion = kubeVersion
	rel, err := install.Run(ch, vals)
	if err != nil {
		return nil, "", err
	}
	r, ok := rel.(*release.Release)
	if !ok {
		return nil, "", fmt.Errorf("unexpected release type %T", rel)
	}
	objs, err := decodeObjects([]byte(r.Manifest))
	return objs, r.Info.Notes, err
}

// mustRender renders and fails the test on an error.
func mustRender(t *testing.T, vals map[string]any) []*unstructured.Unstructured {
	t.Helper()
	objs, _, err := render(t, vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	return objs
}

// decodeObjects splits a multi-document YAML stream into objects.
func decodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, err
		}
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
}

// find returns the objects of a kind.
func find(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var found []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			found = append(found, o)
		}
	}
	return found
}

// only returns the single object of a kind, failing the test otherwise.
func only(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	found := find(objs, kind)
	if len(found) != 1 {
		t.Fatalf("want one %s, got %d", kind, len(found))
	}
	return found[0]
}

// baseName is an object's name without the installer's prefix: the
// release's full name in the chart, "paymentjob-operator-" in install.yaml.
func baseName(name, prefix string) string { return strings.TrimPrefix(name, prefix+"-") }
