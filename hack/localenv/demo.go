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
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// The demo's checks: the samples reach their phases, the sandbox charged
// and refunded each once, and the plugin tells a payment's story.

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
	debit := &debitWatch{kubectl: kubectl}
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

		if err := debit.observe(byKey[debitNamespace+"/"+debitJob]); err != nil {
			return err
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
			job := byKey[s.namespace+"/"+s.name]
			count(s, job.Status.Phase, readyReason(job.Status.Conditions), "")
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
			return debit.done()
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
	if want := charged(); len(keys) != want {
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

// charged is how many samples the sandbox charges: the Completed ones.
func charged() int {
	n := 0
	for _, s := range samples {
		if s.phase == paymentsv1alpha1.PhaseCompleted {
			n++
		}
	}
	return n
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
