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
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// Users of the control plane. Every one is in system:masters; the history
// manager has a user of its own so that the audit log attributes its
// requests exactly (the API server's own lease renewals are writes too).
const (
	userManager        = "bench-manager"
	userHistoryManager = "bench-history-manager"
	// providerName is the PaymentProvider of every phase namespace.
	providerName = "sandbox"
	// secretName holds the fake Stripe key of every phase namespace.
	secretName = "sandbox-credentials"
	// creatorQPS lets the benchmark's own creators never wait on the
	// client-side limit.
	creatorQPS = 20000
)

// auditPolicy logs the history manager's requests, and nobody else's: the
// audit costs nothing in the measured phases.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  users: ["` + userHistoryManager + `"]
- level: None
`

// cluster is etcd and kube-apiserver from the assets folder, with the CRDs
// installed.
type cluster struct {
	env *envtest.Environment
	// admin reaches the API server as the benchmark.
	admin *rest.Config
	// kubeconfigs are the managers' kubeconfig files by user.
	kubeconfigs map[string]string
	// auditLog holds the history manager's requests.
	auditLog string
	scheme   *runtime.Scheme
	// creator has no practical client-side limit; it creates the jobs and
	// watches them.
	creator client.WithWatch
	http    *http.Client
	// etcd reads the stored objects straight from etcd.
	etcd    *etcdClient
	version string
	logs    []*os.File
}

// startCluster starts the control plane with its logs, certificates and
// kubeconfigs under dir.
func startCluster(assets, crdDir, dir string) (*cluster, error) {
	for _, bin := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(filepath.Join(assets, bin)); err != nil {
			return nil, fmt.Errorf("control plane binary missing, run `make envtest-assets` or pass -assets: %w", err)
		}
	}
	c := &cluster{kubeconfigs: map[string]string{}, auditLog: filepath.Join(dir, "audit.log")}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		return nil, err
	}
	apiLog, err := c.logFile(filepath.Join(dir, "kube-apiserver.log"))
	if err != nil {
		return nil, err
	}
	etcdLog, err := c.logFile(filepath.Join(dir, "etcd.log"))
	if err != nil {
		c.closeLogs()
		return nil, err
	}
	api := &envtest.APIServer{Out: apiLog, Err: apiLog}
	api.Configure().
		Set("audit-policy-file", policy).
		Set("audit-log-path", c.auditLog).
		Set("audit-log-format", "json").
		Set("etcd-prefix", etcdPrefix)
	c.env = &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        []string{crdDir},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  10 * time.Second,
		ControlPlane: envtest.ControlPlane{
			Etcd:      &envtest.Etcd{Out: etcdLog, Err: etcdLog},
			APIServer: api,
		},
	}
	if _, err := c.env.Start(); err != nil {
		// Start may leave etcd running when kube-apiserver fails.
		_ = c.env.Stop()
		c.closeLogs()
		return nil, fmt.Errorf("cannot start the control plane from %s (logs in %s): %w", assets, dir, err)
	}
	if err := c.init(dir); err != nil {
		return nil, errors.Join(err, c.stop())
	}
	return c, nil
}

// init writes the managers' kubeconfigs and creates the benchmark's
// clients.
func (c *cluster) init(dir string) error {
	admin, err := c.env.AddUser(envtest.User{Name: "bench-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("cannot create the benchmark's user: %w", err)
	}
	c.admin = admin.Config()
	c.etcd = &etcdClient{endpoint: c.env.ControlPlane.Etcd.URL.String(), http: &http.Client{}}
	c.admin.UserAgent = "paymentjob-bench"
	for _, name := range []string{userManager, userHistoryManager} {
		u, err := c.env.AddUser(envtest.User{Name: name, Groups: []string{"system:masters"}}, nil)
		if err != nil {
			return fmt.Errorf("cannot create user %s: %w", name, err)
		}
		data, err := u.KubeConfig()
		if err != nil {
			return fmt.Errorf("cannot write the kubeconfig of %s: %w", name, err)
		}
		path := filepath.Join(dir, name+".kubeconfig")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			return err
		}
		c.kubeconfigs[name] = path
	}

	c.scheme = runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, paymentsv1alpha1.AddToScheme} {
		if err := add(c.scheme); err != nil {
			return err
		}
	}
	if c.creator, err = c.client(creatorQPS, creatorQPS); err != nil {
		return err
	}
	if c.http, err = rest.HTTPClientFor(c.admin); err != nil {
		return fmt.Errorf("cannot create the metrics client: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(c.admin)
	if err != nil {
		return err
	}
	v, err := dc.ServerVersion()
	if err != nil {
		return fmt.Errorf("cannot read the API server's version: %w", err)
	}
	c.version = v.GitVersion
	return nil
}

// client returns a client of the benchmark's user with its own client-side
// rate limit.
func (c *cluster) client(qps float64, burst int) (client.WithWatch, error) {
	cfg := rest.CopyConfig(c.admin)
	cfg.QPS, cfg.Burst = float32(qps), burst
	cl, err := client.NewWithWatch(cfg, client.Options{Scheme: c.scheme})
	if err != nil {
		return nil, fmt.Errorf("cannot create a client: %w", err)
	}
	return cl, nil
}

// requestCounts scrapes apiserver_request_total from the API server's
// /metrics. The scrape is a non-resource request: it is not counted as a
// read of any resource.
func (c *cluster) requestCounts(ctx context.Context) (requestCounts, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(c.admin.Host, "/")+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot scrape the API server's metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("cannot scrape the API server's metrics: %s: %s", resp.Status, body)
	}
	return parseRequestCounts(resp.Body)
}

// quiesce scrapes the API server's counters until two scrapes half a second
// apart agree on the resource writes (events are sent asynchronously,
// after the write that caused them), at most for limit, and returns the
// last scrape.
func (c *cluster) quiesce(ctx context.Context, limit time.Duration) (requestCounts, error) {
	deadline := time.Now().Add(limit)
	prev, err := c.requestCounts(ctx)
	if err != nil {
		return nil, err
	}
	for time.Now().Before(deadline) {
		if err := sleep(ctx, 500*time.Millisecond); err != nil {
			return nil, err
		}
		cur, err := c.requestCounts(ctx)
		if err != nil {
			return nil, err
		}
		writes := func(k requestKey) bool { return k.resource != "" && isMutating(k.verb) }
		if cur.minus(prev).sum(writes) == 0 {
			return cur, nil
		}
		prev = cur
	}
	return prev, nil
}

// providerSetup is the PaymentProvider of a phase namespace and its
// Secret.
type providerSetup struct {
	// apiBase is the sandbox's URL.
	apiBase     string
	secretValue string
	// requestsPerSecond, when set, limits the charge requests on the
	// client side, as a user of Stripe's live mode sets it; unset, the
	// limit is off.
	requestsPerSecond int32
	// lookup is spec.lookup.policy; empty leaves the API's default
	// (BeforeFirstCharge).
	lookup paymentsv1alpha1.LookupPolicy
	// eventsSecret, when set, is the Secret of spec.events (key
	// endpointSecret), created by the phase.
	eventsSecret string
}

// setupNamespace creates a namespace and, unless p is nil, the Secret and
// the PaymentProvider that p describes.
func (c *cluster) setupNamespace(ctx context.Context, ns string, p *providerSetup) error {
	if err := c.creator.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		return fmt.Errorf("cannot create namespace %s: %w", ns, err)
	}
	if p == nil {
		return nil
	}
	if err := c.creator.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: ns,
			Labels: map[string]string{paymentsv1alpha1.LabelCredentials: "true"}},
		StringData: map[string]string{"apiKey": p.secretValue},
	}); err != nil {
		return fmt.Errorf("cannot create the secret of %s: %w", ns, err)
	}
	if err := c.creator.Create(ctx, &paymentsv1alpha1.PaymentProvider{
		ObjectMeta: metav1.ObjectMeta{Name: providerName, Namespace: ns},
		Spec:       p.spec(),
	}); err != nil {
		return fmt.Errorf("cannot create the payment provider of %s: %w", ns, err)
	}
	return nil
}

// spec is the PaymentProvider's spec.
func (p *providerSetup) spec() paymentsv1alpha1.PaymentProviderSpec {
	timeout := int32(10)
	spec := paymentsv1alpha1.PaymentProviderSpec{
		Stripe: &paymentsv1alpha1.StripeProvider{
			APIBase:      p.apiBase,
			SecretKeyRef: paymentsv1alpha1.SecretKeyReference{Name: secretName, Key: "apiKey"},
		},
		TimeoutSeconds: &timeout,
	}
	if p.requestsPerSecond > 0 {
		rps := p.requestsPerSecond
		spec.RequestsPerSecond = &rps
	}
	if p.eventsSecret != "" {
		spec.Events = &paymentsv1alpha1.ProviderEvents{SecretRef: paymentsv1alpha1.SecretKeyReference{Name: p.eventsSecret, Key: "endpointSecret"}}
	}
	if p.lookup != "" {
		spec.Lookup = &paymentsv1alpha1.ProviderLookup{Policy: p.lookup}
	}
	return spec
}

// waitProvidersReady waits until the PaymentProvider of each namespace is
// Ready for its current generation.
func (c *cluster) waitProvidersReady(ctx context.Context, namespaces []string, timeout time.Duration, mgr *manager) error {
	deadline := time.Now().Add(timeout)
	for _, ns := range namespaces {
		for {
			var pp paymentsv1alpha1.PaymentProvider
			err := c.creator.Get(ctx, types.NamespacedName{Namespace: ns, Name: providerName}, &pp)
			if err != nil {
				return fmt.Errorf("cannot get the payment provider of %s: %w", ns, err)
			}
			ready := meta.FindStatusCondition(pp.Status.Conditions, paymentsv1alpha1.ConditionReady)
			if ready != nil && ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == pp.Generation {
				break
			}
			if mgr != nil && mgr.proc.Exited() {
				return mgr.proc.ExitError()
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the payment provider of %s is not Ready after %s (condition %+v)", ns, timeout, ready)
			}
			if err := sleep(ctx, 200*time.Millisecond); err != nil {
				return err
			}
		}
	}
	return nil
}

// objectWatcher watches the PaymentJobs, or the PaymentRefunds, of a
// namespace, for a RetryWatcher.
type objectWatcher struct {
	c  client.WithWatch
	ns string
	// newList is the list type of the kind watched.
	newList func() client.ObjectList
	// fieldSelector, when set, narrows the watch (metadata.name=...).
	fieldSelector string
}

// WatchWithContext starts a watch with the options of the RetryWatcher.
func (w objectWatcher) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	if w.fieldSelector != "" {
		opts.FieldSelector = w.fieldSelector
	}
	return w.c.Watch(ctx, w.newList(), &client.ListOptions{Namespace: w.ns, Raw: &opts})
}

func (c *cluster) logFile(path string) (*os.File, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	c.logs = append(c.logs, f)
	return f, nil
}

func (c *cluster) closeLogs() {
	for _, f := range c.logs {
		_ = f.Close()
	}
}

// stop stops kube-apiserver and etcd.
func (c *cluster) stop() error {
	err := c.env.Stop()
	c.closeLogs()
	if err != nil {
		return fmt.Errorf("cannot stop the control plane: %w", err)
	}
	return nil
}

// auditCountsFrom counts the history manager's requests logged since
// offset bytes of the audit log.
func (c *cluster) auditCountsFrom(offset int64) (auditCounts, error) {
	data, err := readFrom(c.auditLog, offset)
	if err != nil {
		return auditCounts{}, fmt.Errorf("cannot read the audit log: %w", err)
	}
	return parseAudit(bytes.NewReader(data), userHistoryManager)
}

// sleep waits for d or until ctx is done.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
