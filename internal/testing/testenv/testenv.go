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

// Package testenv starts the local control plane (etcd and kube-apiserver
// built by `make envtest-assets`) for the envtest suites, with the operator's
// CRDs installed. It is imported only by tests.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Env is a running control plane with the operator's CRDs installed.
type Env struct {
	// Config reaches the API server as an administrator.
	Config *rest.Config
	// ServerVersion is the gitVersion the API server reports, such as v1.37.2.
	ServerVersion string

	env *envtest.Environment
}

// Start starts etcd and kube-apiserver from the folder in KUBEBUILDER_ASSETS
// and installs the CRDs from config/crd/bases. It never downloads anything:
// without the self-built binaries it returns an error that says how to get them.
func Start() (*Env, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS is not set: run the tests with `make test`, " +
			"which builds the control plane into bin/k8s and sets it")
	}
	for _, bin := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			return nil, fmt.Errorf("control plane binary missing (run `make envtest-assets`): %w", err)
		}
	}

	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		// Two suites may start their control planes at once on a small machine.
		ControlPlaneStartTimeout: 90 * time.Second,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("cannot start the control plane from %s: %w", assets, err)
	}

	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("cannot create a discovery client: %w", err)
	}
	info, err := dc.ServerVersion()
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("cannot read the API server version: %w", err)
	}
	fmt.Printf("testenv: kube-apiserver %s (%s, %s) from %s, serving %s\n",
		info.GitVersion, info.GoVersion, info.Platform, assets, cfg.Host)
	return &Env{Config: cfg, ServerVersion: info.GitVersion, env: env}, nil
}

// Stop stops kube-apiserver and etcd and removes their data.
func (e *Env) Stop() error {
	return e.env.Stop()
}

// ExpectedVersion is the Kubernetes version that bin/k8s was built for, read
// from the KUBEBUILDER_ASSETS folder name (bin/k8s/<version>-<os>-<arch>).
func ExpectedVersion() string {
	dir := filepath.Base(os.Getenv("KUBEBUILDER_ASSETS"))
	version, _, _ := strings.Cut(dir, "-")
	return "v" + version
}

// repoRoot finds the operator's module root by walking up from the test's
// working directory (its package folder), so the CRDs are found whichever
// package the tests run in.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("cannot read the working directory: %w", err)
	}
	for {
		mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(mod), "module "+modulePath+"\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("cannot find the %s module above the working directory", modulePath)
		}
		dir = parent
	}
}

const modulePath = "github.com/idempotency-dev/paymentjob-operator"
