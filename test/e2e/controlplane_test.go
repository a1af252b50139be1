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

package e2e

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/idempotency-dev/paymentjob-operator/internal/testing/childproc"
)

// controlPlane is etcd, kube-apiserver and kube-controller-manager from
// KUBEBUILDER_ASSETS. Their data and certificate folders are the suite's own
// (not envtest's temporary ones), so kube-apiserver can be stopped and started
// again on the same etcd, the same port and the same certificates: the
// kubeconfig the managers hold stays valid across the restart.
// kube-controller-manager stops and starts with kube-apiserver.
type controlPlane struct {
	env *envtest.Environment
	// cfg reaches the API server as an administrator.
	cfg *rest.Config
	// dir holds the data, certificates and logs.
	dir string
	// kubeconfig is the path of an administrator kubeconfig for the managers
	// and kube-controller-manager.
	kubeconfig string
	// controllerManager runs the namespace and garbage collector
	// controllers, so that namespaces and owned objects go away as in a
	// real cluster; nil while kube-apiserver is stopped.
	controllerManager *process
	// controllerManagerBin is its binary, controllerManagerStarts how
	// many times it was started (each start logs to a file of its own).
	controllerManagerBin    string
	controllerManagerStarts int
	logs                    []*os.File
	// stopped is true once stop ran.
	stopped bool
}

// startControlPlane starts etcd and kube-apiserver with their data, certificates and
// logs under dir, installs the CRDs, writes an admin kubeconfig and starts
// kube-controller-manager with it.
func startControlPlane(assets, crdDir, dir string) (*controlPlane, error) {
	kcmBin := filepath.Join(assets, "kube-controller-manager")
	if _, err := os.Stat(kcmBin); err != nil {
		return nil, fmt.Errorf("kube-controller-manager missing from KUBEBUILDER_ASSETS (%s): run `make envtest-assets` "+
			"(or `make test-e2e`), which builds it: %w", assets, err)
	}
	certDir, dataDir := filepath.Join(dir, "apiserver-certs"), filepath.Join(dir, "etcd-data")
	for _, d := range []string{certDir, dataDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	cp := &controlPlane{dir: dir, controllerManagerBin: kcmBin}
	apiLog, err := cp.logFile(filepath.Join(dir, "kube-apiserver.log"))
	if err != nil {
		return nil, err
	}
	etcdLog, err := cp.logFile(filepath.Join(dir, "etcd.log"))
	if err != nil {
		return nil, err
	}
	cp.env = &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        []string{crdDir},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 90 * time.Second,
		// kube-apiserver may not end on SIGTERM while clients hold
		// watches; it is killed after this.
		ControlPlaneStopTimeout: apiServerStopGrace,
		ControlPlane: envtest.ControlPlane{
			Etcd:      &envtest.Etcd{DataDir: dataDir, Out: etcdLog, Err: etcdLog},
			APIServer: &envtest.APIServer{CertDir: certDir, Out: apiLog, Err: apiLog},
		},
	}
	if _, err := cp.env.Start(); err != nil {
		cp.closeLogs()
		return nil, fmt.Errorf("cannot start the control plane from %s: %w", assets, err)
	}

	admin, err := cp.env.AddUser(envtest.User{Name: "e2e-admin", Groups: []string{"system:masters"}}, nil)
	if err == nil {
		cp.cfg = admin.Config()
		var data []byte
		if data, err = admin.KubeConfig(); err == nil {
			cp.kubeconfig = filepath.Join(dir, "kubeconfig")
			err = os.WriteFile(cp.kubeconfig, data, 0o600)
		}
	}
	if err != nil {
		return nil, errors.Join(fmt.Errorf("cannot write the admin kubeconfig: %w", err), cp.stop())
	}
	if err := cp.startControllerManager(); err != nil {
		return nil, errors.Join(err, cp.stop())
	}
	return cp, nil
}

// controllerManagerStartTimeout bounds the wait for kube-controller-manager's
// controllers to start; the garbage collector gives its caches 30 s to sync.
const controllerManagerStartTimeout = time.Minute

// startControllerManager starts kube-controller-manager with only the
// namespace and garbage collector controllers, as the administrator, and
// waits until both controllers run. It listens on no port. Its log is
// kube-controller-manager.log, kube-controller-manager-<n>.log from the
// n-th start on.
func (c *controlPlane) startControllerManager() error {
	c.controllerManagerStarts++
	logName := "kube-controller-manager.log"
	if c.controllerManagerStarts > 1 {
		logName = fmt.Sprintf("kube-controller-manager-%d.log", c.controllerManagerStarts)
	}
	p, err := startProcess("kube-controller-manager", c.controllerManagerBin, filepath.Join(c.dir, logName), nil, nil,
		"--kubeconfig="+c.kubeconfig,
		"--controllers=namespace-controller,garbage-collector-controller",
		// One instance per control plane: no Lease to wait for.
		"--leader-elect=false",
		// The controllers act as the administrator: no service account
		// tokens, so no token controller and no signing key.
		"--use-service-account-credentials=false",
		// No serving at all (healthz, metrics): no port, no certificate,
		// no authentication or authorization delegation to set up. The
		// bind address only matters if someone turns the port back on.
		"--secure-port=0",
		"--bind-address=127.0.0.1",
		// Deleting a namespace lists and deletes every namespaced resource
		// in it; the default 20 QPS makes that take seconds per namespace.
		"--kube-api-qps=200",
		"--kube-api-burst=400",
	)
	if err != nil {
		return err
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(controllerManagerStartTimeout)
	for {
		select {
		case <-p.Done():
			return fmt.Errorf("cannot start kube-controller-manager: %w", p.ExitError())
		case <-deadline:
			p.Stop(apiServerStopGrace)
			return fmt.Errorf("kube-controller-manager did not start its controllers within %s; last lines of %s:\n%s",
				controllerManagerStartTimeout, p.Log, childproc.Tail(p.Log, 20))
		case <-tick.C:
			// What v1.37's namespace controller and garbage collector log
			// once they run (the latter after its initial cache sync).
			log := p.ReadLog()
			if strings.Contains(log, "Starting namespace controller") && strings.Contains(log, "Proceeding to collect garbage") {
				c.controllerManager = p
				return nil
			}
		}
	}
}

// stopControllerManager stops kube-controller-manager, if it runs: SIGTERM,
// and SIGKILL after apiServerStopGrace. It reports an earlier exit that
// nobody asked for.
func (c *controlPlane) stopControllerManager() error {
	p := c.controllerManager
	if p == nil {
		return nil
	}
	c.controllerManager = nil
	var err error
	if p.Exited() {
		err = p.ExitError()
	}
	p.Stop(apiServerStopGrace)
	return err
}

func (c *controlPlane) logFile(path string) (*os.File, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	c.logs = append(c.logs, f)
	return f, nil
}

func (c *controlPlane) closeLogs() {
	for _, f := range c.logs {
		_ = f.Close()
	}
}

// apiServerStopGrace is how long kube-apiserver (and etcd) may take to end
// after SIGTERM before they are killed.
const apiServerStopGrace = 5 * time.Second

// stopAPIServer stops kube-controller-manager and kube-apiserver and leaves
// etcd running: SIGTERM, and SIGKILL after apiServerStopGrace, which it
// reports as killed for kube-apiserver. It returns once the port refuses
// connections.
func (c *controlPlane) stopAPIServer() (killed bool, err error) {
	// kube-controller-manager first, so that it shuts down against a
	// kube-apiserver that still answers.
	kcmErr := c.stopControllerManager()
	if err := c.env.ControlPlane.APIServer.Stop(); err != nil {
		// envtest kills the process when SIGTERM did not end it in time.
		if !strings.Contains(err.Error(), "timeout waiting for process") {
			return false, errors.Join(kcmErr, err)
		}
		killed = true
	}
	addr := c.env.ControlPlane.APIServer.HostPort()
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		_ = conn.Close()
		return killed, errors.Join(kcmErr, fmt.Errorf("kube-apiserver still accepts connections on %s after it was stopped", addr))
	}
	return killed, kcmErr
}

// startAPIServer starts kube-apiserver again on the same port, certificates
// and etcd, waits until it is healthy, then starts kube-controller-manager
// again. A kube-controller-manager kept running through the outage would
// reconnect by itself, but only after its informers' backoff (up to 30 s),
// during which namespaces and dependents are not deleted.
func (c *controlPlane) startAPIServer() error {
	before := c.env.ControlPlane.APIServer.HostPort()
	if err := c.env.ControlPlane.APIServer.Start(); err != nil {
		return err
	}
	if after := c.env.ControlPlane.APIServer.HostPort(); after != before {
		return fmt.Errorf("kube-apiserver came back on %s instead of %s", after, before)
	}
	return c.startControllerManager()
}

// stop stops kube-controller-manager, kube-apiserver and etcd. Only the
// first call does anything.
func (c *controlPlane) stop() error {
	if c.stopped {
		return nil
	}
	c.stopped = true
	_, apiErr := c.stopAPIServer()
	err := errors.Join(apiErr, c.env.Stop())
	c.closeLogs()
	return err
}

// cluster is a control plane the scenarios run against, with the suite's
// client of it.
type cluster struct {
	cp  *controlPlane
	k8s client.WithWatch
	// shared is true for the suite's control plane, which every test
	// shares and TestSecretNeverLeaks inspects after the scenarios.
	shared bool
}

// sharedCluster is the suite's control plane.
func sharedCluster() *cluster {
	return &cluster{cp: suite.cp, k8s: suite.k8s, shared: true}
}

// startCluster starts a control plane of the test's own, with a fresh etcd
// (new data folder), new certificates and the CRDs installed, under dir,
// and stops it when the test ends. The suite's control plane is not
// touched.
func startCluster(t *testing.T, dir string) *cluster {
	t.Helper()
	return startClusters(t, dir)[0]
}

// startClusters is startCluster for a control plane under each of dirs,
// started at the same time.
func startClusters(t *testing.T, dirs ...string) []*cluster {
	t.Helper()
	g := NewWithT(t)
	start := time.Now()
	cps := make([]*controlPlane, len(dirs))
	errs := make([]error, len(dirs))
	var wg sync.WaitGroup
	for i, dir := range dirs {
		wg.Go(func() { cps[i], errs[i] = startControlPlane(suite.assets, suite.crdDir, dir) })
	}
	wg.Wait()
	clusters := make([]*cluster, 0, len(dirs))
	for i, cp := range cps {
		if cp == nil {
			continue
		}
		t.Cleanup(func() {
			if err := cp.stop(); err != nil {
				t.Errorf("cannot stop the control plane in %s: %v", dirs[i], err)
			}
		})
	}
	for i, cp := range cps {
		g.Expect(errs[i]).NotTo(HaveOccurred())
		k8s, err := newClient(cp)
		g.Expect(err).NotTo(HaveOccurred())
		t.Logf("control plane in %s up in %s, kube-apiserver on %s", dirs[i], time.Since(start).Round(time.Millisecond), cp.cfg.Host)
		clusters = append(clusters, &cluster{cp: cp, k8s: k8s})
	}
	return clusters
}
