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

package paymentjobtest

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// crdFiles are config/crd/bases, copied here by `make manifests` so that a
// user's module needs no path to this repository; `make verify` fails when
// the copies drift.
//
//go:embed crds/*.yaml
var crdFiles embed.FS

// CRDs returns the operator's CustomResourceDefinitions, for a user who
// installs them on an envtest.Environment of their own
// (envtest.Environment.CRDs) instead of letting Start do it.
func CRDs() ([]*apiextensionsv1.CustomResourceDefinition, error) {
	files, err := fs.Glob(crdFiles, "crds/*.yaml")
	if err != nil {
		return nil, err
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, name := range files {
		b, err := crdFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096).Decode(crd); err != nil {
			return nil, fmt.Errorf("paymentjobtest: cannot read the embedded CRD %s: %w", name, err)
		}
		crds = append(crds, crd)
	}
	return crds, nil
}
