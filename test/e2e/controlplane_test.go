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
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// controlPlane is etcd and kube-apiserver from KUBEBUILDER_ASSETS. Their
// data and certificate folders are the suite's own (not envtest's
// temporary ones), so kube-apiserver can be stopped and started again on the
// same etcd, the same port and the same certificates: the kubeconfig the
// managers hold stays valid across the restart.
type controlPlane struct {
	env *envtest.Environment
	// cfg reaches the API server as an administrator.
	cfg *rest.Config
	// kubeconfig is the path of an administrator kubeconfig for the managers.
	kubeconfig string
	logs       []*os.File
	// stopped is true once stop ran.
	stopped bool
}

// startControlPlane starts etcd and kube-apiserver with their data, certificates and
// logs under dir, installs the CRDs and writes an admin kubeconfig.
func startControlPlane(assets, crdDir, dir string) (*controlPlane, error) {
	certDir, dataDir := filepath.Join(dir, "apiserver-certs"), filepath.Join(dir, "etcd-data")
	for _, d := range []string{certDir, dataDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	cp := &controlPlane{}
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
	return cp, nil
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

// stopAPIServer stops kube-apiserver and leaves etcd running: SIGTERM, and
// SIGKILL after apiServerStopGrace, which it reports as killed. It returns
// once the port refuses connections.
func (c *controlPlane) stopAPIServer() (killed bool, err error) {
	if err := c.env.ControlPlane.APIServer.Stop(); err != nil {
		// envtest kills the process when SIGTERM did not end it in time.
		if !strings.Contains(err.Error(), "timeout waiting for process") {
			return false, err
		}
		killed = true
	}
	addr := c.env.ControlPlane.APIServer.SecureServing.ListenAddr.HostPort()
	if conn, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		_ = conn.Close()
		return killed, fmt.Errorf("kube-apiserver still accepts connections on %s after it was stopped", addr)
	}
	return killed, nil
}

// startAPIServer starts kube-apiserver again on the same port, certificates
// and etcd, and waits until it is healthy.
func (c *controlPlane) startAPIServer() error {
	before := c.env.ControlPlane.APIServer.SecureServing.ListenAddr.HostPort()
	if err := c.env.ControlPlane.APIServer.Start(); err != nil {
		return err
	}
	if after := c.env.ControlPlane.APIServer.SecureServing.ListenAddr.HostPort(); after != before {
		return fmt.Errorf("kube-apiserver came back on %s instead of %s", after, before)
	}
	return nil
}

// stop stops kube-apiserver and etcd. Only the first call does anything.
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
	g := NewWithT(t)
	start := time.Now()
	cp, err := startControlPlane(suite.assets, suite.crdDir, dir)
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		if err := cp.stop(); err != nil {
			t.Errorf("cannot stop the control plane in %s: %v", dir, err)
		}
	})
	k8s, err := newClient(cp)
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("control plane in %s up in %s, kube-apiserver on %s", dir, time.Since(start).Round(time.Millisecond), cp.cfg.Host)
	return &cluster{cp: cp, k8s: k8s}
}
