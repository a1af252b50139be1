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
	"crypto/sha256"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// The reconciliation of the demo's books (issue 26).
const (
	// booksProvider is the PaymentProvider whose account the demo
	// reconciles. The providers of payments-demo and payments-demo-b
	// reach the same sandbox, one Stripe account: a run of either covers
	// the payments and refunds of both namespaces.
	booksNamespace, booksProvider = "payments-demo", "sandbox"
	// byHandJob is the sample the demo charges again behind the
	// operator's back.
	byHandJob = "coffee-subscription"
	// byHandKey is the Idempotency-Key of that charge: the person's own,
	// not the job's, so that it is a second charge.
	byHandKey = "charged-by-hand-1"
	// sandboxTestKey is a test key: the sandbox takes any sk_test_ key.
	sandboxTestKey = "sk_test_localenv"
)

// kubectlFunc runs kubectl against the local control plane.
type kubectlFunc func(args ...string) (string, error)

// reconcileBooks ends the demo: a PaymentReconciliation of the account
// over the demo's window balances, every sample matched (a declined card
// is matched too: refused at both); then, after a charge made at the
// sandbox behind the operator's back under a sample's key, a second run
// finds exactly that one, a Duplicate.
func reconcileBooks(ctx context.Context, c client.Client, kubectl kubectlFunc, started time.Time, timeout time.Duration, procs ...*process) error {
	from := started.Add(-time.Minute)
	want := int64(len(samples) + len(refundSamples))
	fmt.Println()
	step("Reconciling the sandbox account (PaymentProvider %s/%s; payments-demo-b's provider reaches the same account) from %s",
		booksNamespace, booksProvider, from.UTC().Format(time.RFC3339))
	clean, err := runReconciliation(ctx, c, kubectl, "demo-books", from, timeout, procs...)
	if err != nil {
		return err
	}
	if _, err := printRun(kubectl, clean); err != nil {
		return err
	}
	if s := clean.Status.Summary; s.Discrepancies != 0 || s.Matched != want {
		return fmt.Errorf("reconciliation %s: %d matched and %d discrepancies, want %d and 0 (the report is in the pages above)",
			clean.Name, s.Matched, s.Discrepancies, want)
	}

	var job paymentsv1alpha1.PaymentJob
	if err := c.Get(ctx, client.ObjectKey{Namespace: booksNamespace, Name: byHandJob}, &job); err != nil {
		return fmt.Errorf("cannot get PaymentJob %s/%s: %w", booksNamespace, byHandJob, err)
	}
	if job.Status.ProviderResponse == nil || job.Status.IdempotencyKey == "" {
		return fmt.Errorf("PaymentJob %s/%s records no charge", booksNamespace, byHandJob)
	}
	recorded, key := job.Status.ProviderResponse.ID, job.Status.IdempotencyKey
	form := url.Values{
		"amount":         {strconv.FormatInt(job.Spec.Amount, 10)},
		"currency":       {strings.ToLower(job.Spec.Currency)},
		"payment_method": {"pm_card_visa"},
		"confirm":        {"true"},
		"metadata[" + payment.MetadataKeyIdempotencyKey + "]": {key},
	}
	fmt.Println()
	step("Charging %s/%s again at the sandbox, behind the operator's back, with its key (status.idempotencyKey) in the metadata:",
		booksNamespace, byHandJob)
	fmt.Printf("    curl -s http://%s/v1/payment_intents -u %s: -H 'Idempotency-Key: %s' \\\n", sandboxAddr, sandboxTestKey, byHandKey)
	for _, name := range []string{"amount", "currency", "payment_method", "confirm", "metadata[" + payment.MetadataKeyIdempotencyKey + "]"} {
		fmt.Printf("      -d '%s=%s'", name, form.Get(name))
		if !strings.HasPrefix(name, "metadata[") {
			fmt.Print(" \\")
		}
		fmt.Println()
	}
	injected, err := chargeByHand(ctx, form)
	if err != nil {
		return err
	}
	step("The sandbox charged %s; the operator recorded %s for the key %s", injected, recorded, key)

	fmt.Println()
	step("Reconciling again, over the same window")
	again, err := runReconciliation(ctx, c, kubectl, "demo-books-again", from, timeout, procs...)
	if err != nil {
		return err
	}
	rows, err := printRun(kubectl, again)
	if err != nil {
		return err
	}
	s := again.Status.Summary
	if s.Discrepancies != 1 || s.Categories["Duplicate"] != 1 || len(rows) != 1 {
		return fmt.Errorf("reconciliation %s: %d discrepancies (%v), want 1 Duplicate", again.Name, s.Discrepancies, s.Categories)
	}
	f := rows[0]
	step("Its finding (the report's row):")
	for _, col := range []string{"category", "key", "object", "cluster_id", "provider_ids", "detail", "action"} {
		fmt.Printf("    %-13s %s\n", col+":", f[col])
	}
	ids := strings.Fields(f["provider_ids"])
	if f["category"] != "Duplicate" || f["key"] != key || !slices.Contains(ids, recorded) || !slices.Contains(ids, injected) {
		return fmt.Errorf("reconciliation %s found %v, want a Duplicate of %s naming %s and %s", again.Name, f, key, recorded, injected)
	}
	return nil
}

// runReconciliation creates the PaymentReconciliation name of the demo's
// account from from to a second from now, and returns it once it is
// Completed.
func runReconciliation(ctx context.Context, c client.Client, kubectl kubectlFunc, name string, from time.Time, timeout time.Duration, procs ...*process) (*paymentsv1alpha1.PaymentReconciliation, error) {
	pr := &paymentsv1alpha1.PaymentReconciliation{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: paymentsv1alpha1.PaymentReconciliationSpec{
			ProviderRef: paymentsv1alpha1.ProviderObjectReference{Namespace: booksNamespace, Name: booksProvider},
			From:        &metav1.Time{Time: from},
			To:          &metav1.Time{Time: time.Now().Add(time.Second)},
		},
	}
	if err := c.Create(ctx, pr); err != nil {
		return nil, fmt.Errorf("cannot create PaymentReconciliation %s: %w", name, err)
	}
	deadline := time.After(timeout)
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		if err := c.Get(ctx, client.ObjectKeyFromObject(pr), pr); err != nil {
			return nil, fmt.Errorf("cannot get PaymentReconciliation %s: %w", name, err)
		}
		switch pr.Status.Phase {
		case paymentsv1alpha1.ReconciliationCompleted:
			return pr, nil
		case paymentsv1alpha1.ReconciliationFailed:
			return nil, fmt.Errorf("reconciliation %s failed: %s", name, readyMessage(pr))
		}
		select {
		case <-ctx.Done():
			return nil, errors.New("interrupted")
		case <-deadline:
			out, _ := kubectl("get", "precon", name, "-o", "yaml")
			return nil, fmt.Errorf("reconciliation %s is %q after %s:\n%s", name, pr.Status.Phase, timeout, indent(out))
		case <-tick.C:
		}
		for _, p := range procs {
			if err := exited(p); err != nil {
				return nil, err
			}
		}
	}
}

// printRun prints a finished run as a person reads it, with kubectl: the
// precon line, the summary and the report, fetched as the API reference
// says and checked against the status's sha256. It returns the report's
// rows, by column.
func printRun(kubectl kubectlFunc, pr *paymentsv1alpha1.PaymentReconciliation) ([]map[string]string, error) {
	step("kubectl get precon %s", pr.Name)
	out, err := kubectl("get", "precon", pr.Name)
	if err != nil {
		return nil, err
	}
	fmt.Print(indent(out))
	s, rep := pr.Status.Summary, pr.Status.Report
	discrepancies := fmt.Sprintf("%d discrepancies", s.Discrepancies)
	if s.Discrepancies == 1 {
		discrepancies = "1 discrepancy"
	}
	step("%s: %s, Ready=%s: %d matched, %s (findings about %s and %s)",
		pr.Name, pr.Status.Phase, readyReason(pr.Status.Conditions), s.Matched, discrepancies,
		plural(s.Charges, "charge"), plural(s.Refunds, "refund"))
	selector := paymentsv1alpha1.LabelReconciliation + "=" + pr.Name + "," +
		paymentsv1alpha1.LabelReconciliationAttempt + "=" + rep.Attempt
	const jsonpath = "{range .items[*]}{.csv}{end}"
	fmt.Printf("    The report: %s in %s, %d bytes, sha256 %s:\n", plural(rep.Rows, "row"), plural(int64(rep.Pages), "page"), rep.Bytes, rep.SHA256)
	fmt.Printf("    kubectl get paymentreconciliationreports -l %s -o jsonpath='%s'\n", selector, jsonpath)
	report, err := kubectl("get", "paymentreconciliationreports", "-l", selector, "-o", "jsonpath="+jsonpath)
	if err != nil {
		return nil, err
	}
	fmt.Print(indent(report))
	sum := sha256.Sum256([]byte(report))
	if got := hex.EncodeToString(sum[:]); got != rep.SHA256 {
		return nil, fmt.Errorf("the report's pages of %s hash to %s, the status says %s", pr.Name, got, rep.SHA256)
	}
	fmt.Println("    (sha256 checked: the same as the status's)")
	records, err := csv.NewReader(strings.NewReader(report)).ReadAll()
	if err != nil || len(records) == 0 {
		return nil, fmt.Errorf("cannot read the report of %s as CSV: %v", pr.Name, err)
	}
	rows := make([]map[string]string, 0, len(records)-1)
	for _, rec := range records[1:] {
		row := map[string]string{}
		for i, col := range records[0] {
			if i < len(rec) {
				row[col] = rec[i]
			}
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// plural is "<n> <noun>", with an s unless n is 1.
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// readyMessage is the Ready condition of a run, as "Ready=<status>
// (<reason>): <message>".
func readyMessage(pr *paymentsv1alpha1.PaymentReconciliation) string {
	c := meta.FindStatusCondition(pr.Status.Conditions, paymentsv1alpha1.ConditionReady)
	if c == nil {
		return "no Ready condition yet"
	}
	return fmt.Sprintf("Ready=%s (%s): %s", c.Status, c.Reason, c.Message)
}

// chargeByHand creates and confirms a PaymentIntent at the sandbox, as the
// curl the demo prints does, and returns its id.
func chargeByHand(ctx context.Context, form url.Values) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+sandboxAddr+"/v1/payment_intents",
		strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.SetBasicAuth(sandboxTestKey, "")
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Idempotency-Key", byHandKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("cannot charge the sandbox: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", fmt.Errorf("cannot read the sandbox's answer: %w", err)
	}
	var intent struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &intent) != nil || intent.Status != "succeeded" {
		return "", fmt.Errorf("the sandbox did not charge: HTTP %d: %.512s", resp.StatusCode, body)
	}
	return intent.ID, nil
}
