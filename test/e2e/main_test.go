//go:build e2e

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

// Package e2e is the chaos suite: the real manager and sandbox binaries run
// as processes against a local etcd and kube-apiserver, and are killed,
// doubled (against a sandbox that ignores idempotency keys, so that only
// exclusive claims keep one charge per job), faulted, cut off from the API
// server, replaced by the previous version and back, and rebuilt from Git on
// a fresh control plane while PaymentJobs are charged. Every scenario ends with the same proof: each job terminal, at
// least one completed, each completed job charged exactly once at the
// sandbox, each failed job never charged. The kill9, split-brain and
// sandbox-faults scenarios then reconcile their window (reconcile_test.go):
// the books balance, and a charge made at the sandbox behind the
// operator's back is found as the one Duplicate.
//
// Run it with `make test-e2e`, which builds the binaries and sets
// KUBEBUILDER_ASSETS, MANAGER_BIN and SANDBOX_BIN, and PREVIOUS_MANAGER_BIN
// (the manager of the previous version, hack/upgrade-from, built by
// hack/build-previous-manager.sh) for the upgrade and rollback scenarios,
// which fail without it. The scenarios of the PostgreSQL ledger
// (postgres_test.go) start PostgreSQL servers on 127.0.0.1 with
// internal/testing/pgserver, from Debian's postgresql-15, and fail, naming
// the package, without it. Logs go to a temporary
// folder that is printed, and kept when a test fails (or always, when
// E2E_ARTIFACTS names a folder).
package e2e

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// suite is what every test of the package shares: one control plane, the
// binaries under test and the artifacts of the run.
var suite struct {
	cp         *controlPlane
	k8s        client.WithWatch
	scheme     *runtime.Scheme
	managerBin string
	sandboxBin string
	// previousManagerBin is the manager of the previous version; only the
	// upgrade and rollback scenarios need it, and fail without it.
	previousManagerBin string
	// assets holds etcd and kube-apiserver; crdDir the CRDs they serve.
	assets, crdDir string
	artifacts      string
	// secretValue is the fake Stripe key of every scenario's Secret: it must
	// never appear in a log, an object or an event.
	secretValue string

	mu sync.Mutex
	// managerLogs are the log files of every manager process of the run.
	managerLogs []string
	// namespaces are every namespace a scenario created.
	namespaces []string
	// procs are every process the suite started, to prove none is left.
	procs []*process
	// managerSeq numbers manager processes: POD_NAME=e2e-<n>.
	managerSeq int
}

// Timeouts of the suite; waits are Eventually with these bounds.
const (
	// claimLease and providerTimeout are short so that takeovers after a
	// kill happen within seconds.
	claimLease      = 6 * time.Second
	providerTimeout = 3 * time.Second
	// terminalTimeout bounds the wait for every job of a scenario to end.
	terminalTimeout = 4 * time.Minute
	// leaderElectionNamespace holds the managers' leader election Lease.
	leaderElectionNamespace = "e2e-leader-election"
)

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: e2e suite: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func run(m *testing.M) (code int, err error) {
	// The suite's own client logs nothing; the processes log to files.
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))

	assets := os.Getenv("KUBEBUILDER_ASSETS")
	suite.assets = assets
	suite.managerBin = os.Getenv("MANAGER_BIN")
	suite.sandboxBin = os.Getenv("SANDBOX_BIN")
	suite.previousManagerBin = os.Getenv("PREVIOUS_MANAGER_BIN")
	var missing []string
	for _, v := range []struct{ name, value string }{
		{"KUBEBUILDER_ASSETS", assets}, {"MANAGER_BIN", suite.managerBin}, {"SANDBOX_BIN", suite.sandboxBin},
	} {
		if v.value == "" {
			missing = append(missing, v.name)
		}
	}
	if len(missing) > 0 {
		return 1, fmt.Errorf("%s not set: run the suite with `make test-e2e`, which builds the control plane, "+
			"bin/manager and bin/sandbox and sets them", strings.Join(missing, ", "))
	}
	for _, bin := range []string{suite.managerBin, suite.sandboxBin, filepath.Join(assets, "etcd"), filepath.Join(assets, "kube-apiserver")} {
		if _, err := os.Stat(bin); err != nil {
			return 1, fmt.Errorf("binary missing, run `make test-e2e`: %w", err)
		}
	}

	keep := os.Getenv("E2E_ARTIFACTS")
	if keep != "" {
		suite.artifacts = keep
		err = os.MkdirAll(keep, 0o755)
	} else {
		suite.artifacts, err = os.MkdirTemp("", "paymentjob-e2e-")
	}
	if err != nil {
		return 1, fmt.Errorf("cannot create the artifacts folder: %w", err)
	}
	fmt.Printf("e2e: logs and kubeconfig in %s\n", suite.artifacts)
	suite.secretValue = "sk_test_e2e_" + rand.Text()

	suite.scheme = runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, paymentsv1alpha1.AddToScheme, eventsv1.AddToScheme,
	} {
		if err := add(suite.scheme); err != nil {
			return 1, err
		}
	}

	root, err := repoRoot()
	if err != nil {
		return 1, err
	}
	suite.crdDir = filepath.Join(root, "config", "crd", "bases")
	start := time.Now()
	suite.cp, err = startControlPlane(assets, suite.crdDir, filepath.Join(suite.artifacts, "control-plane"))
	if err != nil {
		return 1, err
	}
	fmt.Printf("e2e: control plane up in %s, kube-apiserver on %s\n", time.Since(start).Round(time.Millisecond), suite.cp.cfg.Host)
	defer func() {
		if stopErr := suite.cp.stop(); stopErr != nil {
			err = errors.Join(err, stopErr)
		}
		if leftErr := checkNoLeftovers(); leftErr != nil {
			err = errors.Join(err, leftErr)
		}
		if err == nil && code == 0 && keep == "" {
			_ = os.RemoveAll(suite.artifacts)
		} else {
			fmt.Printf("e2e: artifacts kept in %s\n", suite.artifacts)
		}
	}()

	if suite.k8s, err = newClient(suite.cp); err != nil {
		return 1, err
	}
	return m.Run(), nil
}

// newClient returns an administrator client of the control plane for the
// suite's own reads and writes.
func newClient(cp *controlPlane) (client.WithWatch, error) {
	cfg := *cp.cfg
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := client.NewWithWatch(&cfg, client.Options{Scheme: suite.scheme})
	if err != nil {
		return nil, fmt.Errorf("cannot create the suite's client: %w", err)
	}
	return c, nil
}

// repoRoot finds the module root above the package folder, where the tests
// run.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find go.mod above the working directory")
		}
		dir = parent
	}
}

// register remembers a process so that the end of the suite can prove it
// is gone.
func register(p *process) {
	suite.mu.Lock()
	defer suite.mu.Unlock()
	suite.procs = append(suite.procs, p)
}

// checkNoLeftovers kills, and reports, any process of the suite still
// running after its test ended.
func checkNoLeftovers() error {
	suite.mu.Lock()
	procs := append([]*process(nil), suite.procs...)
	suite.mu.Unlock()
	var left []string
	for _, p := range procs {
		if !p.Exited() {
			left = append(left, fmt.Sprintf("%s (pid %d)", p.Name, p.Pid()))
			p.Kill()
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("processes left running after their test: %s", strings.Join(left, ", "))
	}
	return nil
}

// recordNamespace remembers a scenario's namespace for TestSecretNeverLeaks.
func recordNamespace(ns string) {
	suite.mu.Lock()
	defer suite.mu.Unlock()
	suite.namespaces = append(suite.namespaces, ns)
}

// recordManagerLog remembers a manager's log file for TestSecretNeverLeaks.
func recordManagerLog(path string) {
	suite.mu.Lock()
	defer suite.mu.Unlock()
	suite.managerLogs = append(suite.managerLogs, path)
}

// nextManagerID returns the next manager number, for POD_NAME=e2e-<n>.
func nextManagerID() int {
	suite.mu.Lock()
	defer suite.mu.Unlock()
	suite.managerSeq++
	return suite.managerSeq
}
