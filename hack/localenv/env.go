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
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/childproc"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/pgserver"
)

// The local environment: what it starts, in order, and how it stops.

// localEnv is a running local environment.
type localEnv struct {
	options
	controlPlane *envtest.Environment
	// kubeconfig is the administrator's (system:masters).
	kubeconfig string
	client     client.Client
	sandbox    *process
	// manager is the manager this command started, nil with --no-manager.
	manager *process
	// pg and pgProgram are the PostgreSQL server of --ledger=postgres;
	// dsnFile holds its ledger database's DSN.
	pg        *pgserver.Server
	pgProgram *pgserver.Program
	dsnFile   string
	// eventsAddr is where the manager serves the signed provider events
	// the sandbox sends; metricsAddr its metrics, both on loopback.
	eventsAddr, metricsAddr string
}

// start starts the control plane, installs the CRDs, the admission
// policies and the user roles, and starts the sandbox and, with
// --ledger=postgres, PostgreSQL.
func (e *localEnv) start(ctx context.Context) error {
	step("Starting etcd and kube-apiserver from %s", e.assets)
	e.controlPlane = &envtest.Environment{
		BinaryAssetsDirectory:    e.assets,
		CRDDirectoryPaths:        []string{filepath.Join(e.root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 90 * time.Second,
	}
	cfg, err := e.controlPlane.Start()
	if err != nil {
		return fmt.Errorf("cannot start the control plane: %w", err)
	}
	step("Installed the CRDs from config/crd/bases")
	e.kubeconfig = filepath.Join(e.work, "kubeconfig")
	if err := writeKubeconfig(e.controlPlane, e.kubeconfig); err != nil {
		return err
	}
	if e.client, err = newClient(cfg); err != nil {
		return err
	}

	// The admission policies, as `make install` installs them with the CRDs.
	if _, err := e.kubectl("apply", "-k", filepath.Join(e.root, "config", "policy")); err != nil {
		return err
	}
	step("Installed the admission policies from config/policy")
	if err := e.installUserRoles(); err != nil {
		return err
	}

	if err := e.startSandbox(ctx); err != nil {
		return err
	}
	if e.ledger == ledgerPostgres {
		return e.startPostgres()
	}
	return nil
}

// startSandbox starts bin/sandbox: bank debits settle after
// debitSettleAfter, and every change is sent as a Stripe event, signed
// with the secret of the samples' events Secret (in the sandbox's
// environment, never its command line), to the events endpoint of the
// manager startManager starts.
func (e *localEnv) startSandbox(ctx context.Context) error {
	secretName, secret, err := webhookSecret(e.root)
	if err != nil {
		return err
	}
	if e.eventsAddr, err = freeLoopbackAddr(); err != nil {
		return err
	}
	if e.metricsAddr, err = freeLoopbackAddr(); err != nil {
		return err
	}
	sandboxLog := filepath.Join(e.work, "sandbox.log")
	hooks := fmt.Sprintf("http://%s/events/%s/%s", e.eventsAddr, debitNamespace, eventsProvider)
	if e.sandbox, err = startProcess("sandbox", filepath.Join(e.root, "bin", "sandbox"), sandboxLog,
		[]string{sandboxSecretEnv + "=" + secret},
		"--addr", sandboxAddr, "--debit-settle-after", debitSettleAfter.String(),
		"--webhook-url", hooks, "--webhook-format", "stripe"); err != nil {
		return err
	}
	if err := waitForSandbox(ctx, e.sandbox); err != nil {
		return err
	}
	step("Sandbox listening on http://%s (log: %s); bank debits settle after %s, and its events, signed with the "+
		"whsec_ secret of Secret %s/%s, go to %s", sandboxAddr, rel(e.root, sandboxLog), debitSettleAfter, debitNamespace, secretName, hooks)
	return nil
}

// stop stops what start and startManager started, the manager first, and
// removes the temporary data: etcd's and PostgreSQL's folders and the DSN
// file. The logs and the kubeconfig stay in the work folder.
func (e *localEnv) stop() {
	for _, p := range []*process{e.manager, e.sandbox} {
		if p != nil {
			stopProcess(p)
		}
	}
	e.stopPostgres()
	if e.controlPlane != nil {
		step("Stopping etcd and kube-apiserver")
		_ = e.controlPlane.Stop()
	}
}

// kubectl runs the self-built kubectl against the local control plane.
// bin/ comes first on PATH, so that kubectl finds the plugin
// bin/kubectl-payments (make build-plugin) as `kubectl payments`, with the
// environment variables that the export lines of stayUp set.
func (e *localEnv) kubectl(args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(e.assets, "kubectl"), args...)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Join(e.root, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.Env = append(cmd.Env, e.exports()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// exports are the variables of a shell that uses the environment:
// kubectl's KUBECONFIG and the plugin's.
func (e *localEnv) exports() []string {
	vars := []string{"KUBECONFIG=" + e.kubeconfig}
	if e.dsnFile != "" {
		vars = append(vars, "KUBECTL_PAYMENTS_LEDGER="+ledgerPostgres, "KUBECTL_PAYMENTS_LEDGER_DSN_FILE="+e.dsnFile)
	}
	// The sandbox listens on loopback over plain http, for status
	// --check-provider.
	return append(vars, "KUBECTL_PAYMENTS_INSECURE_PROVIDER_HOSTS=127.0.0.1")
}

// process is a child process: the sandbox or the manager.
type process = childproc.Process

// startProcess starts a child (see childproc.Start).
func startProcess(name, bin, logPath string, env []string, args ...string) (*process, error) {
	return childproc.Start(name, bin, logPath, env, nil, args...)
}

// exited returns an error if the process ended on its own.
func exited(p *process) error {
	if p.Exited() {
		return p.ExitError()
	}
	return nil
}

// stopProcess sends SIGTERM, and SIGKILL after 10 seconds.
func stopProcess(p *process) {
	if p.Exited() {
		return
	}
	step("Stopping %s", p.Name)
	p.Stop(10 * time.Second)
}

func waitForSandbox(ctx context.Context, p *process) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if err := exited(p); err != nil {
			return fmt.Errorf("%w\n(is something else listening on %s? a demo still running?)", err, sandboxAddr)
		}
		resp, err := http.Get("http://" + sandboxAddr + "/_sandbox/stats")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return errors.New("interrupted")
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("the sandbox did not answer on %s within 30s", sandboxAddr)
}

func writeKubeconfig(env *envtest.Environment, path string) error {
	user, err := env.AddUser(envtest.User{Name: "localenv-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("cannot create the admin user: %w", err)
	}
	data, err := user.KubeConfig()
	if err != nil {
		return fmt.Errorf("cannot write the kubeconfig: %w", err)
	}
	return os.WriteFile(path, data, 0o600)
}

func newClient(cfg *rest.Config) (client.Client, error) {
	scheme := runtime.NewScheme()
	if err := paymentsv1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: scheme})
}
