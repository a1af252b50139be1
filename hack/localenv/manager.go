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
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// The manager: the flags it runs with, the command line that starts one
// again, and staying up when it exits.

// managerFlags are the manager's flags: the local defaults, the ledger's,
// then the user's (after -- ; make run-local MANAGER_ARGS=...), which win
// over the defaults since a flag given twice takes its last value.
func (e *localEnv) managerFlags() []string {
	args := []string{"--leader-elect=false", "--health-probe-bind-address=127.0.0.1:0",
		// The signed events the sandbox sends, and the metrics that count
		// them, over plain http on loopback.
		"--events-bind-address=" + e.eventsAddr, "--metrics-bind-address=" + e.metricsAddr, "--metrics-secure=false",
		// The sandbox listens on loopback over plain http.
		"--insecure-provider-hosts=127.0.0.1",
		// A reconciliation runs as soon as its window ends: nothing here
		// waits for a real provider's books to settle.
		"--reconciliation-settle-margin=0s",
		"--zap-log-level=info"}
	args = append(args, e.ledgerArgs()...)
	return append(args, e.managerArgs...)
}

// managerLog is where the manager this command starts writes.
func (e *localEnv) managerLog() string { return filepath.Join(e.work, "manager.log") }

// startManager starts bin/manager against the local API server.
func (e *localEnv) startManager() error {
	var err error
	e.manager, err = startProcess("manager", filepath.Join(e.root, "bin", "manager"), e.managerLog(),
		[]string{"KUBECONFIG=" + e.kubeconfig}, e.managerFlags()...)
	if err != nil {
		return err
	}
	step("Manager running (pid %d, log: %s), with:", e.manager.Pid(), rel(e.root, e.managerLog()))
	fmt.Printf("    %s\n", strings.Join(e.managerFlags(), " "))
	return nil
}

// managerCommand is the shell command that starts a manager against the
// local environment, as this command started its own, with your flags
// where it says so.
func (e *localEnv) managerCommand() string {
	flags := e.managerFlags()
	words := make([]string, 0, 2+len(flags))
	words = append(words, "KUBECONFIG="+shellQuote(e.kubeconfig), shellQuote(filepath.Join(e.root, "bin", "manager")))
	for _, a := range flags {
		words = append(words, shellQuote(a))
	}
	return strings.Join(words, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=./:,@%+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// printUp prints what a user pastes into another terminal.
func (e *localEnv) printUp() {
	bin := filepath.Join(e.root, "bin")
	fmt.Printf("\nThe local environment is up (outcome ledger: %s). In another terminal:\n\n", e.ledger)
	// kubectl and the plugin: the self-built kubectl, and bin/ where
	// kubectl finds bin/kubectl-payments as `kubectl payments`.
	fmt.Printf("  export PATH=%s:%s:$PATH\n", shellQuote(bin), shellQuote(e.assets))
	for _, v := range e.exports() {
		name, value, _ := strings.Cut(v, "=")
		fmt.Printf("  export %s=%s\n", name, shellQuote(value))
	}
	fmt.Printf(`
  kubectl get pj -A
  kubectl wait --for=condition=Ready pj/invoice-2026-0042 -n payments-demo --timeout=60s
  kubectl describe pj declined-card -n payments-demo
  kubectl patch pj held-until-approved -n payments-demo --type=merge -p '{"spec":{"suspend":false}}'
  kubectl get prefund -A
  kubectl payments status pj/invoice-2026-0042 -n payments-demo
  kubectl payments ledger find pj/invoice-2026-0042 -n payments-demo
  curl -s http://%s/_sandbox/stats

The user roles of config/rbac are installed: bind one to try what it allows, e.g.

  kubectl create rolebinding alice-pays -n payments-demo --clusterrole=paymentjob-operator-paymentjob-editor-role --user=alice
  kubectl auth can-i create paymentjobs -n payments-demo --as=alice

`, sandboxAddr)
	if e.manager != nil {
		fmt.Printf("The manager runs as pid %d (log: %s). Stop it (kill %d) to run another one with other flags:\n"+
			"the environment stays up, with every object.\n", e.manager.Pid(), rel(e.root, e.managerLog()), e.manager.Pid())
	} else {
		fmt.Printf("No manager runs (--no-manager): the samples wait. Start one (your flags go at the end):\n\n  %s\n\n", e.managerCommand())
	}
	fmt.Println("Press Ctrl-C to stop everything.")
}

// stayUp keeps the environment running until Ctrl-C. When the manager
// exits it says so, with its exit code and log, and prints the command
// that starts one again; the rest stays up. The sandbox exiting ends
// everything: the samples cannot be paid without it.
func (e *localEnv) stayUp(ctx context.Context) error {
	e.printUp()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	managerDone := e.manager == nil
	for {
		select {
		case <-ctx.Done():
			fmt.Println()
			return nil
		case <-tick.C:
		}
		if err := exited(e.sandbox); err != nil {
			return err
		}
		if !managerDone && e.manager.Exited() {
			managerDone = true
			e.printManagerExited()
		}
	}
}

// printManagerExited says how the manager ended and how to start another.
func (e *localEnv) printManagerExited() {
	how := fmt.Sprintf("with code %d", e.manager.ExitCode())
	if e.manager.ExitCode() < 0 {
		how = "on a signal"
	}
	fmt.Println()
	step("The manager (pid %d) exited %s (log: %s). The environment stays up, with every object.",
		e.manager.Pid(), how, rel(e.root, e.managerLog()))
	fmt.Printf("    Start a manager again (your flags go at the end; it logs to the terminal):\n\n    %s\n\n"+
		"    Ctrl-C here still stops everything.\n", e.managerCommand())
}
