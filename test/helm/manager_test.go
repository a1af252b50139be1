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

package helm

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/gbytes"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The manager binary accepts the arguments the chart gives it, with the
// defaults and with every value set, and becomes ready with them against
// the control plane: a flag the chart passes and the manager does not know,
// or a value it refuses, would be a crash loop after `helm install`. Only
// the listen addresses are moved to loopback ports.
func TestManagerAcceptsTheChartsArguments(t *testing.T) {
	bin := mustEnv(t, "MANAGER_BIN")
	c := cluster(t)
	installCRDs(t, c)
	kubeconfig := writeKubeconfig(t)
	createNamespace(t, c, releaseNamespace, nil)

	for _, tc := range valueSets(t) {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			args := containerArgs(t, only(t, mustRender(t, tc.vals), "Deployment"))
			probe := freeLoopbackAddr(t)
			args = onLoopback(args, freeLoopbackAddr(t), probe)
			// Outside a cluster the Lease's namespace must be given.
			args = append(args, "--leader-election-namespace="+releaseNamespace)

			log := gbytes.NewBuffer()
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig, "POD_NAME=chart-"+strings.ReplaceAll(tc.name, " ", "-"))
			cmd.Stdout, cmd.Stderr = log, log
			g.Expect(cmd.Start()).To(Succeed())
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			t.Cleanup(func() {
				// The exit status of a stopped manager is of no interest.
				_ = cmd.Process.Signal(syscall.SIGTERM)
				select {
				case err := <-exited:
					_ = err
				case <-time.After(20 * time.Second):
					_ = cmd.Process.Kill()
					err := <-exited
					_ = err
				}
			})

			g.Eventually(func(g Gomega) {
				select {
				case err := <-exited:
					exited <- err
					StopTrying(fmt.Sprintf("the manager exited at start (%v):\n%s", err, string(log.Contents()))).Now()
				default:
				}
				resp, err := http.Get("http://" + probe + "/readyz")
				g.Expect(err).NotTo(HaveOccurred())
				defer func() { _ = resp.Body.Close() }()
				g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
			}).WithTimeout(90*time.Second).WithPolling(250*time.Millisecond).Should(Succeed(), func() string { return "manager log:\n" + string(log.Contents()) })
		})
	}
}

// onLoopback points the metrics and health probe listeners of args at the
// given loopback addresses, and an events listener at a free loopback port.
func onLoopback(args []string, metrics, probe string) []string {
	out := make([]string, 0, len(args))
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "--metrics-bind-address="):
			a = "--metrics-bind-address=" + metrics
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			a = "--health-probe-bind-address=" + probe
		case strings.HasPrefix(a, "--events-bind-address=") && a != "--events-bind-address=0":
			a = "--events-bind-address=127.0.0.1:0"
		}
		out = append(out, a)
	}
	return out
}

// freeLoopbackAddr is a free port on 127.0.0.1.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// installCRDs creates the chart's CRDs, unless an earlier test did, and
// waits until they are served.
func installCRDs(t *testing.T, c client.Client) {
	t.Helper()
	g := NewWithT(t)
	for _, crd := range find(mustRender(t, map[string]any{}), "CustomResourceDefinition") {
		err := c.Create(context.Background(), crd)
		g.Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "%s: %v", crd.GetName(), err)
	}
	g.Eventually(func(g Gomega) {
		for _, kind := range []string{"PaymentJob", "PaymentProvider", "PaymentLedger"} {
			list := &unstructured.UnstructuredList{}
			list.SetAPIVersion("payments.idempotency.dev/v1alpha1")
			list.SetKind(kind + "List")
			g.Expect(c.List(context.Background(), list)).To(Succeed())
		}
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// writeKubeconfig writes a kubeconfig of an administrator of the control
// plane, as a Helm user or a manager outside the cluster would have.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	user, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
