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

// Command localenv runs the operator locally, with nothing installed but Go:
// etcd and kube-apiserver from bin/k8s, the CRDs, bin/sandbox on
// 127.0.0.1:12111 and bin/manager, all as processes of this one. With --demo
// it applies config/samples, waits until every sample (the PaymentJobs and
// the PaymentRefund) reaches its expected phase, prints the results and the
// sandbox's charges and refunds, reconciles the sandbox account (balanced),
// charges a sample again at the sandbox behind the operator's back and
// reconciles again (one Duplicate), shows a payment's story with
// `kubectl payments status` (bin/kubectl-payments, found on PATH by the
// self-built kubectl), and stops everything (make demo);
// without it, it stays up until Ctrl-C (make run-local).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/childproc"
)

// sandboxAddr is where config/samples expects the sandbox.
const sandboxAddr = "127.0.0.1:12111"

// expectation is the phase a sample must reach, and why.
type expectation struct {
	namespace, name string
	phase           paymentsv1alpha1.PaymentJobPhase
	note            string
}

// refundSamples are the PaymentRefunds of config/samples.
var refundSamples = []expectation{
	{"payments-demo", "invoice-2026-0042-partial", paymentsv1alpha1.PhaseCompleted, "500 of invoice-2026-0042's 2000 given back"},
}

// Refunds the sandbox must hold once the samples are done: one per
// refund sample, for this much in all.
const (
	wantRefunds        = 1
	wantRefundedAmount = 500
)

var samples = []expectation{
	{"payments-demo", "coffee-subscription", paymentsv1alpha1.PhaseCompleted, "plain payment, key = name"},
	{"payments-demo", "invoice-2026-0042", paymentsv1alpha1.PhaseCompleted, "explicit idempotency key"},
	{"payments-demo", "declined-card", paymentsv1alpha1.PhaseFailed, "card declined: nothing charged"},
	{"payments-demo", "held-until-approved", paymentsv1alpha1.PhaseCompleted, "suspended, then resumed by the demo"},
	{"payments-demo", "order-1001", paymentsv1alpha1.PhaseCompleted, "same key as in payments-demo-b"},
	{"payments-demo-b", "order-1001", paymentsv1alpha1.PhaseCompleted, "same key as in payments-demo: a second payment"},
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "\nlocalenv: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		demo    bool
		root    string
		assets  string
		timeout time.Duration
	)
	flag.BoolVar(&demo, "demo", false, "Apply config/samples, wait for the expected phases, print the results and stop.")
	flag.StringVar(&root, "root", ".", "The repository root.")
	flag.StringVar(&assets, "assets", os.Getenv("KUBEBUILDER_ASSETS"), "The folder with etcd, kube-apiserver and kubectl (bin/k8s/<version>-<os>-<arch>).")
	flag.DurationVar(&timeout, "timeout", 3*time.Minute, "How long the demo waits for the samples.")
	flag.Parse()
	log.SetLogger(zap.New(zap.WriteTo(io.Discard)))

	root, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	if assets == "" {
		return errors.New("--assets or KUBEBUILDER_ASSETS must name the control plane folder: run `make demo` or `make run-local`")
	}
	work := filepath.Join(root, "bin", "local")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}

	// Ctrl-C and SIGTERM stop everything this command started.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	step("Starting etcd and kube-apiserver from %s", assets)
	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: 90 * time.Second,
	}
	if _, err := env.Start(); err != nil {
		return fmt.Errorf("cannot start the control plane: %w", err)
	}
	defer func() {
		step("Stopping etcd and kube-apiserver")
		_ = env.Stop()
	}()
	step("Installed the CRDs from config/crd/bases")

	kubeconfig := filepath.Join(work, "kubeconfig")
	if err := writeKubeconfig(env, kubeconfig); err != nil {
		return err
	}

	// The admission policies, as `make install` installs them with the CRDs.
	// bin/ comes first on PATH, so that kubectl finds the plugin
	// bin/kubectl-payments (make build-plugin) as `kubectl payments`.
	kubectl := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, filepath.Join(assets, "kubectl"), args...)
		cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig,
			"PATH="+filepath.Join(root, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			return string(out), fmt.Errorf("kubectl %s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	if _, err := kubectl("apply", "-k", filepath.Join(root, "config", "policy")); err != nil {
		return err
	}
	step("Installed the admission policies from config/policy")

	sandboxLog := filepath.Join(work, "sandbox.log")
	sandbox, err := startProcess("sandbox", filepath.Join(root, "bin", "sandbox"), sandboxLog, nil,
		"--addr", sandboxAddr)
	if err != nil {
		return err
	}
	defer stopProcess(sandbox)
	if err := waitForSandbox(ctx, sandbox); err != nil {
		return err
	}
	step("Sandbox listening on http://%s (log: %s)", sandboxAddr, rel(root, sandboxLog))

	managerLog := filepath.Join(work, "manager.log")
	manager, err := startProcess("manager", filepath.Join(root, "bin", "manager"), managerLog,
		[]string{"KUBECONFIG=" + kubeconfig},
		"--leader-elect=false", "--metrics-bind-address=0", "--health-probe-bind-address=127.0.0.1:0",
		// The sandbox listens on loopback over plain http.
		"--insecure-provider-hosts=127.0.0.1",
		// A reconciliation runs as soon as its window ends: nothing here
		// waits for a real provider's books to settle.
		"--reconciliation-settle-margin=0s",
		"--zap-log-level=info")
	if err != nil {
		return err
	}
	defer stopProcess(manager)
	step("Manager running (log: %s)", rel(root, managerLog))

	step("kubectl apply -k config/samples")
	started := time.Now()
	// The API server's admission policies learn a new CRD's kind a moment
	// after the CRD is served; until then it answers 503 ("There can be a
	// delay between when CustomResourceDefinitions are created and when
	// they are available"). Applying again is harmless.
	var out string
	for attempt := 1; ; attempt++ {
		out, err = kubectl("apply", "-k", filepath.Join(root, "config", "samples"))
		if err == nil || attempt == 30 || !strings.Contains(out, "ServiceUnavailable") {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	if err != nil {
		return err
	}
	fmt.Print(indent(out))

	c, err := newClient(env.Config)
	if err != nil {
		return err
	}
	if !demo {
		return stayUp(ctx, root, kubeconfig, assets, manager, sandbox)
	}

	if err := waitForSamples(ctx, c, kubectl, timeout, manager, sandbox); err != nil {
		return err
	}
	for _, kind := range []string{"pj", "prefund"} {
		out, err = kubectl("get", kind, "-A")
		if err != nil {
			return err
		}
		fmt.Println()
		step("kubectl get %s -A", kind)
		fmt.Print(indent(out))
	}
	if err := printStats(ctx); err != nil {
		return err
	}
	if err := checkRefunds(ctx, c); err != nil {
		return err
	}
	if err := reconcileBooks(ctx, c, kubectl, started, timeout, manager, sandbox); err != nil {
		return err
	}
	if err := pluginStatus(root, kubectl); err != nil {
		return err
	}
	fmt.Println()
	step("Demo passed: every sample reached its expected phase, the books balanced, the charge made behind the operator's back was found, and kubectl payments told a payment's story. Stopping everything.")
	return nil
}

// pluginJob is the Completed sample whose story the demo asks the plugin
// for: charged, then partly refunded.
const pluginJob = "invoice-2026-0042"

// pluginStatus runs `kubectl payments status` on a Completed sample through
// kubectl, which finds bin/kubectl-payments on PATH, and fails when the
// plugin does.
func pluginStatus(root string, kubectl func(...string) (string, error)) error {
	if _, err := os.Stat(filepath.Join(root, "bin", "kubectl-payments")); err != nil {
		return fmt.Errorf("the plugin is not built (make build-plugin): %w", err)
	}
	fmt.Println()
	step("kubectl payments status pj/%s -n payments-demo", pluginJob)
	out, err := kubectl("payments", "status", "pj/"+pluginJob, "-n", "payments-demo")
	if err != nil {
		return err
	}
	fmt.Print(indent(out))
	return nil
}

// waitForSamples resumes the suspended sample once it waits in Pending, and
// returns when every sample is in its expected phase.
func waitForSamples(ctx context.Context, c client.Client, kubectl func(...string) (string, error), timeout time.Duration, procs ...*process) error {
	step("Waiting for the samples (up to %s)", timeout)
	deadline := time.After(timeout)
	resumed := false
	last := ""
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		var jobs paymentsv1alpha1.PaymentJobList
		if err := c.List(ctx, &jobs); err != nil {
			return fmt.Errorf("cannot list payment jobs: %w", err)
		}
		byKey := map[string]paymentsv1alpha1.PaymentJob{}
		for _, j := range jobs.Items {
			byKey[j.Namespace+"/"+j.Name] = j
		}
		var refunds paymentsv1alpha1.PaymentRefundList
		if err := c.List(ctx, &refunds); err != nil {
			return fmt.Errorf("cannot list payment refunds: %w", err)
		}
		refundByKey := map[string]paymentsv1alpha1.PaymentRefund{}
		for _, r := range refunds.Items {
			refundByKey[r.Namespace+"/"+r.Name] = r
		}

		held := byKey["payments-demo/held-until-approved"]
		if !resumed && held.Status.Phase == paymentsv1alpha1.PhasePending {
			if ready := meta.FindStatusCondition(held.Status.Conditions, paymentsv1alpha1.ConditionReady); ready != nil && ready.Reason == "Suspended" {
				step("held-until-approved waits in Pending (Suspended); approving it:")
				fmt.Println("    kubectl patch pj held-until-approved -n payments-demo --type=merge -p '{\"spec\":{\"suspend\":false}}'")
				if _, err := kubectl("patch", "pj", "held-until-approved", "-n", "payments-demo",
					"--type=merge", "-p", `{"spec":{"suspend":false}}`); err != nil {
					return err
				}
				resumed = true
			}
		}

		var parts []string
		done := 0
		count := func(s expectation, phase paymentsv1alpha1.PaymentJobPhase, why, suffix string) {
			if phase == "" {
				phase = "New"
			}
			if phase == s.phase {
				done++
			}
			if why != "" && phase != s.phase {
				phase += paymentsv1alpha1.PaymentJobPhase("(" + why + ")")
			}
			parts = append(parts, fmt.Sprintf("%s/%s%s=%s", strings.TrimPrefix(s.namespace, "payments-"), s.name, suffix, phase))
		}
		for _, s := range samples {
			count(s, byKey[s.namespace+"/"+s.name].Status.Phase, "", "")
		}
		for _, s := range refundSamples {
			rf := refundByKey[s.namespace+"/"+s.name]
			count(s, rf.Status.Phase, readyReason(rf.Status.Conditions), " (refund)")
		}
		total := len(samples) + len(refundSamples)
		if line := strings.Join(parts, " "); line != last {
			fmt.Printf("  [%d/%d] %s\n", done, total, line)
			last = line
		}
		if done == total {
			return nil
		}

		select {
		case <-ctx.Done():
			return errors.New("interrupted")
		case <-deadline:
			var missing []string
			miss := func(kind string, s expectation, st paymentsv1alpha1.PaymentStatus) {
				if st.Phase != s.phase {
					why := ""
					if ready := meta.FindStatusCondition(st.Conditions, paymentsv1alpha1.ConditionReady); ready != nil {
						why = fmt.Sprintf(" (%s: %s)", ready.Reason, ready.Message)
					}
					missing = append(missing, fmt.Sprintf("%s %s/%s is %q, want %s%s", kind, s.namespace, s.name, st.Phase, s.phase, why))
				}
			}
			for _, s := range samples {
				miss("PaymentJob", s, byKey[s.namespace+"/"+s.name].Status.PaymentStatus)
			}
			for _, s := range refundSamples {
				miss("PaymentRefund", s, refundByKey[s.namespace+"/"+s.name].Status.PaymentStatus)
			}
			return fmt.Errorf("samples did not reach their expected phase within %s:\n  %s", timeout, strings.Join(missing, "\n  "))
		case <-tick.C:
		}
		for _, p := range procs {
			if err := exited(p); err != nil {
				return err
			}
		}
	}
}

// stayUp keeps the environment running for kubectl until Ctrl-C.
func stayUp(ctx context.Context, root, kubeconfig, assets string, procs ...*process) error {
	kubectl := rel(root, filepath.Join(assets, "kubectl"))
	fmt.Printf(`
The local environment is up. In another terminal:

  export KUBECONFIG=%s
  %s get pj -A
  %s wait --for=condition=Ready pj/invoice-2026-0042 -n payments-demo --timeout=60s
  %s describe pj declined-card -n payments-demo
  %s patch pj held-until-approved -n payments-demo --type=merge -p '{"spec":{"suspend":false}}'
  %s get prefund -A
  curl -s http://%s/_sandbox/stats

With bin/ on PATH, kubectl finds the plugin bin/kubectl-payments:

  export PATH=%s:$PATH
  %s payments status pj/invoice-2026-0042 -n payments-demo

Press Ctrl-C to stop everything.
`, kubeconfig, kubectl, kubectl, kubectl, kubectl, kubectl, sandboxAddr, filepath.Join(root, "bin"), kubectl)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			fmt.Println()
			return nil
		case <-tick.C:
			for _, p := range procs {
				if err := exited(p); err != nil {
					return err
				}
			}
		}
	}
}

func printStats(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+sandboxAddr+"/_sandbox/stats", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("cannot read the sandbox stats: %w", err)
	}
	defer resp.Body.Close()
	var stats struct {
		Requests       int64          `json:"requests"`
		Charges        int64          `json:"charges"`
		Replays        int64          `json:"replays"`
		Declines       int64          `json:"declines"`
		ChargesByKey   map[string]int `json:"chargesByKey"`
		RefundRequests int64          `json:"refundRequests"`
		Refunds        int64          `json:"refunds"`
		RefundRefusals int64          `json:"refundRefusals"`
		RefundsByKey   map[string]int `json:"refundsByKey"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&stats); err != nil {
		return fmt.Errorf("cannot decode the sandbox stats: %w", err)
	}
	fmt.Println()
	step("Sandbox (GET /_sandbox/stats): %d requests, %d charges, %d replays, %d declines",
		stats.Requests, stats.Charges, stats.Replays, stats.Declines)
	keys := make([]string, 0, len(stats.ChargesByKey))
	for k := range stats.ChargesByKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("    %-40s charged %d time(s)\n", k, stats.ChargesByKey[k])
		if stats.ChargesByKey[k] != 1 {
			return fmt.Errorf("key %s was charged %d times", k, stats.ChargesByKey[k])
		}
	}
	if want := 5; len(keys) != want {
		return fmt.Errorf("the sandbox charged %d keys, want %d", len(keys), want)
	}

	step("Sandbox (GET /_sandbox/stats): %d refund requests, %d refunds, %d refused",
		stats.RefundRequests, stats.Refunds, stats.RefundRefusals)
	keys = keys[:0]
	for k := range stats.RefundsByKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("    %-48s refunded %d time(s)\n", k, stats.RefundsByKey[k])
		if stats.RefundsByKey[k] != 1 {
			return fmt.Errorf("key %s was refunded %d times", k, stats.RefundsByKey[k])
		}
	}
	if len(keys) != wantRefunds || stats.Refunds != wantRefunds {
		return fmt.Errorf("the sandbox made %d refunds under %d keys, want %d", stats.Refunds, len(keys), wantRefunds)
	}
	return nil
}

// checkRefunds reads, at the sandbox's Stripe API, the refunds of the
// charges the refund samples name: what went back is the sandbox's word,
// not the operator's status.
func checkRefunds(ctx context.Context, c client.Client) error {
	var total int64
	for _, s := range refundSamples {
		var rf paymentsv1alpha1.PaymentRefund
		if err := c.Get(ctx, client.ObjectKey{Namespace: s.namespace, Name: s.name}, &rf); err != nil {
			return fmt.Errorf("cannot get PaymentRefund %s/%s: %w", s.namespace, s.name, err)
		}
		if rf.Status.Charge == nil || rf.Status.ProviderResponse == nil {
			return fmt.Errorf("PaymentRefund %s/%s names no charge or refund", s.namespace, s.name)
		}
		refunds, err := sandboxRefunds(ctx, rf.Status.Charge.ID)
		if err != nil {
			return err
		}
		step("Sandbox (GET /v1/refunds?payment_intent=%s), refunded by %s:", rf.Status.Charge.ID, s.name)
		for _, r := range refunds {
			fmt.Printf("    %s  %d %s  %s\n", r.ID, r.Amount, r.Currency, r.Status)
			if r.Status == "succeeded" {
				total += r.Amount
			}
		}
	}
	if total != wantRefundedAmount {
		return fmt.Errorf("the sandbox gave back %d in all, want %d", total, wantRefundedAmount)
	}
	return nil
}

// sandboxRefund is what the demo reads of a refund at the sandbox.
type sandboxRefund struct {
	ID       string `json:"id"`
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
	Status   string `json:"status"`
}

// sandboxRefunds lists the refunds of a PaymentIntent as the operator does,
// GET /v1/refunds?payment_intent=, with any test key the sandbox accepts.
func sandboxRefunds(ctx context.Context, paymentIntent string) ([]sandboxRefund, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet,
		"http://"+sandboxAddr+"/v1/refunds?limit=100&payment_intent="+url.QueryEscape(paymentIntent), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer sk_test_localenv")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("cannot list the sandbox's refunds: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("listing the sandbox's refunds of %s: HTTP %d", paymentIntent, resp.StatusCode)
	}
	var list struct {
		Data []sandboxRefund `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, fmt.Errorf("cannot decode the sandbox's refunds: %w", err)
	}
	return list.Data, nil
}

// readyReason is the reason of the Ready condition, if any.
func readyReason(cs []metav1.Condition) string {
	if ready := meta.FindStatusCondition(cs, paymentsv1alpha1.ConditionReady); ready != nil {
		return ready.Reason
	}
	return ""
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

func step(format string, args ...any) {
	fmt.Printf("==> "+format+"\n", args...)
}

func indent(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString("    " + line + "\n")
	}
	return b.String()
}

func rel(root, path string) string {
	if r, err := filepath.Rel(root, path); err == nil {
		return r
	}
	return path
}
