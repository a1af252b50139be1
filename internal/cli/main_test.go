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

package cli_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/operator"
	"github.com/idempotency-dev/paymentjob-operator/pkg/paymentjobtest"
)

// The plugin is tested as a user runs it: the kubectl-payments binary,
// found on PATH by the self-built kubectl, against the envtest control
// plane with the operator and the sandbox (pkg/paymentjobtest).

var update = flag.Bool("update", false, "rewrite the golden files of testdata/ from this run")

// settleMargin is the operator's --reconciliation-settle-margin here.
const settleMargin = 2 * time.Second

var (
	env *paymentjobtest.Env
	k8s client.Client
	// kubectl is the self-built kubectl; pluginDir holds kubectl-payments.
	kubectl, pluginDir string
	// kubeconfig is an administrator's; viewerKubeconfig a user without
	// any role.
	kubeconfig, viewerKubeconfig string
	testEnv                      *envtest.Environment
	// restConfig reaches the API server as its administrator.
	restConfig *rest.Config
)

// testNamespaces are the namespaces of the tests, the only ones the
// operator of env watches: a test may run an operator of its own for
// another namespace (postgres_test.go).
var testNamespaces = []string{"approve", "books", "books-tty", "completion", "errors", "ledger", "ledger-export", "rbac", "refund", "refund-again",
	"refund-byhand", "refund-git", "refund-gitops", "refund-gone", "refund-rbac", "refund-typo", "resolve", "status", "status-check"}

func TestMain(m *testing.M) {
	flag.Parse()
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return 1, errors.New("KUBEBUILDER_ASSETS is not set: run make test, or point it at bin/k8s/<version>")
	}
	kubectl = filepath.Join(assets, "kubectl")
	dir, err := os.MkdirTemp("", "kubectl-payments-test")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(dir)
	if pluginDir, err = plugin(dir); err != nil {
		return 1, err
	}
	crds, err := paymentjobtest.CRDs()
	if err != nil {
		return 1, err
	}
	testEnv = &envtest.Environment{BinaryAssetsDirectory: assets, CRDs: crds, ControlPlaneStartTimeout: 90 * time.Second}
	cfg, err := testEnv.Start()
	if err != nil {
		return 1, err
	}
	restConfig = cfg
	defer func() { _ = testEnv.Stop() }()
	if kubeconfig, err = userKubeconfig(dir, "admin", []string{"system:masters"}); err != nil {
		return 1, err
	}
	if viewerKubeconfig, err = userKubeconfig(dir, "viewer", nil); err != nil {
		return 1, err
	}
	env, err = paymentjobtest.Start(paymentjobtest.Options{Config: cfg, Namespaces: testNamespaces,
		Operator: operator.Options{ReconciliationSettleMargin: ptr.To(settleMargin)}})
	if err != nil {
		return 1, err
	}
	defer func() { _ = env.Stop() }()
	k8s = env.Client()
	return m.Run(), nil
}

// plugin returns the folder of kubectl-payments: KUBECTL_PAYMENTS's (make
// test builds bin/kubectl-payments), or one it builds into dir.
func plugin(dir string) (string, error) {
	bin := filepath.Join(dir, "kubectl-payments")
	if prebuilt := os.Getenv("KUBECTL_PAYMENTS"); prebuilt != "" {
		abs, err := filepath.Abs(prebuilt)
		if err != nil {
			return "", err
		}
		return dir, os.Symlink(abs, bin)
	}
	build := exec.Command("go", "build", "-o", bin, "../../cmd/kubectl-payments")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("cannot build kubectl-payments: %w\n%s", err, out)
	}
	return dir, nil
}

func userKubeconfig(dir, name string, groups []string) (string, error) {
	u, err := testEnv.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return "", err
	}
	b, err := u.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+".kubeconfig")
	return path, os.WriteFile(path, b, 0o600)
}

// result is what a command printed and how it exited.
type result struct {
	Stdout, Stderr string
	Code           int
}

// kubectlPayments runs `kubectl payments args...` as the administrator.
func kubectlPayments(args ...string) result {
	return kubectlAs(kubeconfig, append([]string{"payments"}, args...)...)
}

// kubectlAs runs kubectl with args under kubeconfig config, with the
// plugin on PATH.
func kubectlAs(config string, args ...string) result {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectl, args...)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+config, "PATH="+pluginDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if exit, ok := errors.AsType[*exec.ExitError](err); ok {
		code = exit.ExitCode()
	} else if err != nil {
		code = -1
		stderr.WriteString(err.Error())
	}
	return result{Stdout: stdout.String(), Stderr: stderr.String(), Code: code}
}

// succeeded fails the test unless r exited 0, showing what it printed.
func succeeded(g Gomega, r result) {
	g.ExpectWithOffset(1, r.Code).To(Equal(0), "stdout:\n%s\nstderr:\n%s", r.Stdout, r.Stderr)
}

// newNamespace creates a namespace of its own for a test, with a Stripe
// provider "stripe" at the sandbox.
func newNamespace(t *testing.T, name string) string {
	t.Helper()
	if !slices.Contains(testNamespaces, name) {
		t.Fatalf("namespace %s is not in testNamespaces, which the operator watches", name)
	}
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if err := env.CreateProvider(ctx, name, "stripe"); err != nil {
		t.Fatal(err)
	}
	return name
}

// createJob creates a PaymentJob that charges amount usd and waits for
// phase (skipping the wait for an empty one).
func createJob(t *testing.T, ns, name string, amount int64, phase paymentsv1alpha1.PaymentJobPhase, change ...func(*paymentsv1alpha1.PaymentJob)) *paymentsv1alpha1.PaymentJob {
	t.Helper()
	ctx := context.Background()
	pj := &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: paymentsv1alpha1.PaymentJobSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: "stripe"},
			Amount: amount, Currency: "usd", PaymentMethod: paymentjobtest.PaymentMethodSucceeds,
			Description: "Invoice " + name},
	}
	for _, c := range change {
		c(pj)
	}
	if err := k8s.Create(ctx, pj); err != nil {
		t.Fatal(err)
	}
	if phase == "" {
		return pj
	}
	got, err := env.WaitForPhase(ctx, ns, name, phase, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func suspendedJob(pj *paymentsv1alpha1.PaymentJob) { pj.Spec.Suspend = ptr.To(true) }

// scrubbers replace what changes from run to run (times, ages, ids, ports,
// names the sandbox draws) with placeholders, so that golden files hold
// only what a run decides.
var scrubbers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`-refund-[bcdfghjklmnpqrstvwxz2456789]{5}\b`), "-refund-<suffix>"},
	{regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`), "<time>"},
	{regexp.MustCompile(`\b(in )?(\d+[smhdy])+( ago)?\b`), "<age>"},
	{regexp.MustCompile(`\b(pi|re|ch|dp)_[A-Za-z0-9]+`), "<${1}_id>"},
	{regexp.MustCompile(`\bacct_[A-Za-z0-9]+`), "acct_<id>"},
	{regexp.MustCompile(`127\.0\.0\.1:\d+`), "127.0.0.1:<port>"},
	{regexp.MustCompile(`"(uid|resourceVersion)":(\s*)"[^"]*"`), `"$1":$2"<$1>"`},
	{regexp.MustCompile(`("holder":\s*")[^"]+`), "$1<holder>"},
	{regexp.MustCompile(`(holder:\s*)\S+`), "$1<holder>"},
	{regexp.MustCompile(`(Claim:\s+)[^,]+`), "$1<holder>"},
	{regexp.MustCompile(`\b[0-9a-f]{64}\b`), "<sha256>"},
	{regexp.MustCompile(`(Written to:\s+)\S+`), "$1<file>"},
	{regexp.MustCompile(`(\S)  +`), "$1  "},
}

func scrub(s string) string {
	for _, r := range scrubbers {
		s = r.re.ReplaceAllString(s, r.with)
	}
	return s
}

// golden compares got, scrubbed, with testdata/name (rewritten with
// -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	got = scrub(got)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run %s -update to write it)", err, t.Name())
	}
	if strings.TrimSpace(string(want)) != strings.TrimSpace(got) {
		t.Errorf("%s differs from the golden file %s (go test -run %s -update rewrites it):\n--- want\n%s\n--- got\n%s", name, path, t.Name(), want, got)
	}
}
