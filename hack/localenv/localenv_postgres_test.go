//go:build postgres

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
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/pkg/ledger"
)

// make run-local LEDGER=postgres, as a user runs it (make test-postgres;
// about 40 s): localenv with --ledger=postgres and a manager flag after
// --. A sample's outcome is in the PostgreSQL ledger, read by the plugin
// with only the variables of the export lines set; the samples were
// created (not "unchanged"); the user roles are installed and bind as the
// docs say. The manager is stopped: the environment stays up with its
// objects, and the command it prints starts a manager that pays a new
// job. Ctrl-C stops everything and removes the DSN file.
func TestRunLocalOnPostgres(t *testing.T) {
	g := NewWithT(t)
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	g.Expect(assets).NotTo(BeEmpty(), "KUBEBUILDER_ASSETS: run make test-postgres")
	root, err := filepath.Abs(filepath.Join("..", ".."))
	g.Expect(err).NotTo(HaveOccurred())
	for _, bin := range []string{"manager", "sandbox", "kubectl-payments"} {
		_, err := os.Stat(filepath.Join(root, "bin", bin))
		g.Expect(err).NotTo(HaveOccurred(), "bin/%s: make test-postgres builds it", bin)
	}
	dir := t.TempDir()
	localenv := filepath.Join(dir, "localenv")
	out, err := exec.Command("go", "build", "-o", localenv, ".").CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "go build ./hack/localenv: %s", out)

	work := filepath.Join(dir, "local")
	env := startLocalenv(t, localenv, "--root", root, "--work", work, "--assets", assets, "--ledger=postgres",
		"--", "--max-concurrent-reconciles=3")
	env.waitFor(g, "Press Ctrl-C to stop everything.", 3*time.Minute)
	printed := env.output()
	g.Expect(printed).To(MatchRegexp(`Manager running \(pid \d+, log: .*\), with:\n\s+.*--ledger-backend=postgres ` +
		`--ledger-postgres-dsn-file=\S+ --ledger-postgres-durability=local --max-concurrent-reconciles=3\n`))
	g.Expect(printed).To(ContainSubstring("    namespace/payments-demo created\n"))
	g.Expect(printed).NotTo(ContainSubstring("unchanged"))

	// The shell of the export lines, and nothing else.
	shell := exports(g, printed)
	g.Expect(shell).To(HaveKeyWithValue("KUBECTL_PAYMENTS_LEDGER", "postgres"))
	g.Expect(shell).To(HaveKeyWithValue("KUBECTL_PAYMENTS_INSECURE_PROVIDER_HOSTS", "127.0.0.1"))
	dsnFile := shell["KUBECTL_PAYMENTS_LEDGER_DSN_FILE"]
	g.Expect(dsnFile).To(Equal(filepath.Join(work, "ledger-postgres-dsn")))
	kubectl := func(args ...string) (string, error) { return runIn(shell, "", "kubectl", args...) }

	charge := waitForCharge(g, kubectl, "payments-demo", "invoice-2026-0042", filepath.Join(work, "manager.log"))
	inLedger(g, kubectl, "payments-demo", "invoice-2026-0042", charge)
	// Not in the CRD pages: the flag wins over the variable.
	_, err = kubectl("payments", "ledger", "find", "pj/invoice-2026-0042", "-n", "payments-demo", "--ledger=crd")
	g.Expect(exitCode(err)).To(Equal(3), "the CRD ledger holds no entry: %v", err)

	// The user roles, bound as the docs and the printed lines say.
	g.Expect(printed).To(ContainSubstring("kubectl create rolebinding alice-pays -n payments-demo " +
		"--clusterrole=paymentjob-operator-paymentjob-editor-role --user=alice\n"))
	for _, role := range []string{"paymentjob-editor-role", "paymentrefund-viewer-role", "paymentreconciliation-viewer-role"} {
		_, err := kubectl("get", "clusterrole", "paymentjob-operator-"+role)
		g.Expect(err).NotTo(HaveOccurred())
	}
	_, err = kubectl("create", "rolebinding", "alice-pays", "-n", "payments-demo",
		"--clusterrole=paymentjob-operator-paymentjob-editor-role", "--user=alice")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kubectl("auth", "can-i", "create", "paymentjobs", "-n", "payments-demo", "--as=alice")).To(Equal("yes\n"))
	answer, err := kubectl("auth", "can-i", "create", "paymentjobs", "-n", "payments-demo-b", "--as=alice")
	g.Expect(answer).To(Equal("no\n"), "%v", err)

	// The manager stops; the environment stays up, with its objects.
	pid, err := strconv.Atoi(regexp.MustCompile(`Stop it \(kill (\d+)\)`).FindStringSubmatch(printed)[1])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(syscall.Kill(pid, syscall.SIGTERM)).To(Succeed())
	env.waitFor(g, "    Ctrl-C here still stops everything.\n", time.Minute)
	printed = env.output()
	g.Expect(printed).To(ContainSubstring("==> The manager (pid %d) exited with code 0 (log: %s). The environment stays up, with every object.",
		pid, filepath.Join(work, "manager.log")))
	g.Expect(env.running()).To(BeTrue(), "localenv ended with its manager:\n%s", printed)
	jobs, err := kubectl("get", "pj", "-A", "-o", "name")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Fields(jobs)).To(HaveLen(len(samples)))

	// A new job, paid by a manager started with the printed command.
	command := regexp.MustCompile(`(?m)^    (KUBECONFIG=.*)$`).FindStringSubmatch(printed)
	g.Expect(command).NotTo(BeNil(), "no command printed:\n%s", printed)
	_, err = runIn(shell, `{"apiVersion": "payments.idempotency.dev/v1alpha1", "kind": "PaymentJob",
		"metadata": {"name": "after-restart", "namespace": "payments-demo"},
		"spec": {"providerRef": {"name": "sandbox"}, "amount": 700, "currency": "usd", "paymentMethod": "pm_card_visa"}}`,
		"kubectl", "apply", "-f", "-")
	g.Expect(err).NotTo(HaveOccurred())
	stopManager := startManager(t, command[1]+" --zap-log-level=debug", filepath.Join(dir, "manager-again.log"))
	charge = waitForCharge(g, kubectl, "payments-demo", "after-restart", filepath.Join(dir, "manager-again.log"))
	inLedger(g, kubectl, "payments-demo", "after-restart", charge)
	stopManager()

	// Ctrl-C stops everything and removes the DSN file.
	g.Expect(env.interrupt(time.Minute)).To(Succeed())
	g.Expect(env.output()).To(ContainSubstring("==> Stopping PostgreSQL\n"))
	g.Expect(dsnFile).NotTo(BeAnExistingFile())
}

// localenvProcess is a running localenv and what it printed.
type localenvProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	out  bytes.Buffer
	err  error
}

// startLocalenv starts localenv; the test's end interrupts it (Ctrl-C),
// which stops what it started.
func startLocalenv(t *testing.T, bin string, args ...string) *localenvProcess {
	t.Helper()
	p := &localenvProcess{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = p.cmd.Stdout
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r := bufio.NewReader(stdout)
		for {
			line, err := r.ReadString('\n')
			p.mu.Lock()
			p.out.WriteString(line)
			p.mu.Unlock()
			if err != nil {
				break
			}
		}
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		if err := p.interrupt(time.Minute); err != nil {
			t.Errorf("%v\n%s", err, p.output())
		}
	})
	return p
}

func (p *localenvProcess) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *localenvProcess) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// waitFor waits until localenv printed s, failing when it ends first.
func (p *localenvProcess) waitFor(g Gomega, s string, timeout time.Duration) {
	g.Eventually(func(g Gomega) {
		g.Expect(p.output()).To(ContainSubstring(s))
	}).WithTimeout(timeout).WithPolling(200*time.Millisecond).Should(Succeed(), func() string {
		return "localenv printed:\n" + p.output()
	})
}

// interrupt sends SIGINT, as Ctrl-C does, and waits until localenv ends:
// an error unless it exited 0.
func (p *localenvProcess) interrupt(timeout time.Duration) error {
	if p.running() {
		_ = p.cmd.Process.Signal(os.Interrupt)
	}
	select {
	case <-p.done:
		return p.err
	case <-time.After(timeout):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		return errors.New("localenv did not stop within " + timeout.String())
	}
}

// exports reads the export lines localenv printed; $PATH in PATH's is
// this process's.
func exports(g Gomega, printed string) map[string]string {
	vars := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^  export ([A-Z_]+)=(\S+)$`).FindAllStringSubmatch(printed, -1) {
		vars[m[1]] = strings.ReplaceAll(m[2], "$PATH", os.Getenv("PATH"))
	}
	g.Expect(vars).To(HaveKey("KUBECONFIG"))
	g.Expect(vars).To(HaveKey("PATH"))
	return vars
}

// runIn runs name with args in a shell holding only vars (and a HOME of
// kubectl's cache), with stdin, and returns its standard output.
func runIn(vars map[string]string, stdin, name string, args ...string) (string, error) {
	path, err := exec.LookPath(name)
	if strings.Contains(name, "/") || err != nil {
		path = name
	}
	for _, dir := range filepath.SplitList(vars["PATH"]) {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			path = filepath.Join(dir, name)
			break
		}
	}
	cmd := exec.Command(path, args...)
	cmd.Env = []string{"HOME=" + os.TempDir()}
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), &exitError{err: err, stderr: stderr.String()}
	}
	return stdout.String(), nil
}

// exitError is a command's failure with what it wrote to stderr.
type exitError struct {
	err    error
	stderr string
}

func (e *exitError) Error() string { return e.err.Error() + ": " + e.stderr }
func (e *exitError) Unwrap() error { return e.err }

// exitCode is the exit code of runIn's error.
func exitCode(err error) int {
	if exit, ok := errors.AsType[*exec.ExitError](err); ok {
		return exit.ExitCode()
	}
	return -1
}

// waitForCharge waits until the job is Completed and returns its charge;
// the manager's log says why not.
func waitForCharge(g Gomega, kubectl func(...string) (string, error), ns, name, managerLog string) string {
	var charge string
	g.Eventually(func(g Gomega) {
		out, err := kubectl("get", "pj", name, "-n", ns, "-o", "jsonpath={.status.phase} {.status.providerResponse.id}")
		g.Expect(err).NotTo(HaveOccurred())
		phase, id, _ := strings.Cut(out, " ")
		g.Expect(phase).To(Equal("Completed"))
		charge = id
	}).WithTimeout(time.Minute).WithPolling(250*time.Millisecond).Should(Succeed(), func() string {
		b, _ := os.ReadFile(managerLog)
		return "the manager's log:\n" + string(b)
	})
	return charge
}

// inLedger checks, with the plugin and no ledger flag, that the ledger
// holds the job's charge.
func inLedger(g Gomega, kubectl func(...string) (string, error), ns, name, charge string) {
	g.Eventually(func(g Gomega) {
		out, err := kubectl("payments", "ledger", "find", "pj/"+name, "-n", ns, "-o", "json")
		g.Expect(err).NotTo(HaveOccurred())
		var entries []ledger.Entry
		g.Expect(json.Unmarshal([]byte(out), &entries)).To(Succeed())
		g.Expect(entries).To(ConsistOf(And(HaveField("Key", ns+"/"+name), HaveField("Charge", charge))))
	}).WithTimeout(30 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// startManager runs a manager as the printed command line, in a shell,
// until the function it returns or the test's end stops it.
func startManager(t *testing.T, command, logPath string) (stop func()) {
	t.Helper()
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", command)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); _ = log.Close(); close(done) }()
	stop = func() {
		select {
		case <-done:
			return
		default:
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	t.Cleanup(stop)
	return stop
}
