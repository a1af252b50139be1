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

package controllers_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	lua "github.com/yuin/gopher-lua"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// healthKey and refundHealthKey are the argocd-cm keys under which Argo CD
// looks for the script of each kind.
const (
	healthKey       = "resource.customizations.health.payments.idempotency.dev_PaymentJob"
	refundHealthKey = "resource.customizations.health.payments.idempotency.dev_PaymentRefund"
)

// argoHealth is what an Argo CD health script returns.
type argoHealth struct {
	status  string
	message string
}

// argoStatuses are the health statuses Argo CD accepts from a script.
var argoStatuses = []string{"Healthy", "Progressing", "Degraded", "Suspended", "Missing", "Unknown"}

// readHealthScript reads the Argo CD health check.
func readHealthScript(t *testing.T) string {
	t.Helper()
	return string(readRepoFile(t, "config", "argocd", "health.lua"))
}

// runHealthScript runs the script the way Argo CD does: obj is a global
// holding the object, only the base, table, string and math libraries are
// open, and the script returns a table with status and message.
func runHealthScript(script string, obj map[string]any) (argoHealth, error) {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
	} {
		if err := L.CallByParam(lua.P{Fn: L.NewFunction(lib.open), NRet: 0, Protect: true}, lua.LString(lib.name)); err != nil {
			return argoHealth{}, fmt.Errorf("cannot open the Lua library %q: %w", lib.name, err)
		}
	}
	value, err := toLua(L, obj)
	if err != nil {
		return argoHealth{}, err
	}
	L.SetGlobal("obj", value)
	if err := L.DoString(script); err != nil {
		return argoHealth{}, fmt.Errorf("health script failed: %w", err)
	}
	hs, ok := L.Get(-1).(*lua.LTable)
	if !ok {
		return argoHealth{}, fmt.Errorf("health script returned %s, not a table", L.Get(-1).Type())
	}
	status, ok := hs.RawGetString("status").(lua.LString)
	if !ok {
		return argoHealth{}, errors.New("hs.status is not a string")
	}
	message, ok := hs.RawGetString("message").(lua.LString)
	if !ok {
		return argoHealth{}, errors.New("hs.message is not a string")
	}
	return argoHealth{status: string(status), message: string(message)}, nil
}

// toLua converts an object decoded from JSON into Lua values, as Argo CD
// does: maps become tables, slices 1-based arrays, numbers Lua numbers.
func toLua(L *lua.LState, v any) (lua.LValue, error) {
	switch v := v.(type) {
	case nil:
		return lua.LNil, nil
	case bool:
		return lua.LBool(v), nil
	case string:
		return lua.LString(v), nil
	case int64:
		return lua.LNumber(v), nil
	case float64:
		return lua.LNumber(v), nil
	case map[string]any:
		t := L.NewTable()
		for k, e := range v {
			lv, err := toLua(L, e)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			t.RawSetString(k, lv)
		}
		return t, nil
	case []any:
		t := L.NewTable()
		for i, e := range v {
			lv, err := toLua(L, e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			t.RawSetInt(i+1, lv)
		}
		return t, nil
	default:
		return nil, fmt.Errorf("cannot convert %T to Lua", v)
	}
}

// getUnstructured reads a PaymentJob from the API server as Argo CD sees it.
func getUnstructured(g Gomega, ns, name string) *unstructured.Unstructured {
	return getUnstructuredKind(g, "PaymentJob", ns, name)
}

// getUnstructuredKind reads an object of kind from the API server as Argo CD
// sees it.
func getUnstructuredKind(g Gomega, kind, ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(paymentsv1alpha1.GroupVersion.WithKind(kind))
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)).To(Succeed())
	return u
}

func TestArgoCDHealthOnRealStatuses(t *testing.T) {
	script := readHealthScript(t)

	s := newScenario(t)
	// The second operator's provider commits every charge and loses every
	// answer, so its job stays Processing with an uncertain outcome.
	stuck := newScenario(t)
	stuck.engine.FailNextAny(sandbox.FaultAfterCommit, 1000)
	// No operator watches this namespace: its job never gets a status.
	idle := newScenario(t, withoutManager())

	s.create("paid", keyed("invoice-1"))
	s.create("declined", declinedCard)
	s.create("held", suspended)
	stuck.create("stuck", backoffLimit(0))
	idle.create("fresh")
	// A GitOps re-create of a paid job under another name: the provider replays.
	s.waitForPhase("paid", paymentsv1alpha1.PhaseCompleted)
	s.create("paid-again", keyed("invoice-1"))

	isTrue := func(job *paymentsv1alpha1.PaymentJob, condType, reason string) bool {
		c := condition(job, condType)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == reason
	}
	tests := []struct {
		name    string
		ns, job string
		// reached says the operator wrote the state under test.
		reached     func(job *paymentsv1alpha1.PaymentJob) bool
		wantStatus  string
		wantMessage func(job *paymentsv1alpha1.PaymentJob) types.GomegaMatcher
	}{
		{
			name: "no status yet", ns: idle.ns, job: "fresh",
			reached:     func(job *paymentsv1alpha1.PaymentJob) bool { return job.Status.Phase == "" },
			wantStatus:  "Progressing",
			wantMessage: func(*paymentsv1alpha1.PaymentJob) types.GomegaMatcher { return Equal("Waiting for the operator") },
		},
		{
			name: "completed", ns: s.ns, job: "paid",
			reached: func(job *paymentsv1alpha1.PaymentJob) bool {
				return isTrue(job, paymentsv1alpha1.ConditionReady, paymentsv1alpha1.ReasonSucceeded)
			},
			wantStatus: "Healthy",
			wantMessage: func(job *paymentsv1alpha1.PaymentJob) types.GomegaMatcher {
				return Equal("Charged 2000 usd as " + job.Status.ProviderResponse.ID)
			},
		},
		{
			name: "completed by a replay", ns: s.ns, job: "paid-again",
			reached: func(job *paymentsv1alpha1.PaymentJob) bool {
				return job.Status.Phase == paymentsv1alpha1.PhaseCompleted && job.Status.ProviderResponse.Replayed
			},
			wantStatus: "Healthy",
			wantMessage: func(job *paymentsv1alpha1.PaymentJob) types.GomegaMatcher {
				return Equal("Charged 2000 usd as " + job.Status.ProviderResponse.ID + " (replayed)")
			},
		},
		{
			name: "declined", ns: s.ns, job: "declined",
			reached: func(job *paymentsv1alpha1.PaymentJob) bool {
				return job.Status.Phase == paymentsv1alpha1.PhaseFailed
			},
			wantStatus: "Degraded",
			wantMessage: func(job *paymentsv1alpha1.PaymentJob) types.GomegaMatcher {
				return Equal(paymentsv1alpha1.ReasonCardDeclined + ": " + job.Status.Failure.Message)
			},
		},
		{
			name: "suspended", ns: s.ns, job: "held",
			reached: func(job *paymentsv1alpha1.PaymentJob) bool {
				c := condition(job, paymentsv1alpha1.ConditionReady)
				return job.Status.Phase == paymentsv1alpha1.PhasePending && c != nil && c.Reason == paymentsv1alpha1.ReasonSuspended
			},
			wantStatus: "Suspended",
			wantMessage: func(job *paymentsv1alpha1.PaymentJob) types.GomegaMatcher {
				return Equal(condition(job, paymentsv1alpha1.ConditionReady).Message)
			},
		},
		{
			name: "retries exhausted", ns: stuck.ns, job: "stuck",
			reached: func(job *paymentsv1alpha1.PaymentJob) bool {
				return job.Status.Phase == paymentsv1alpha1.PhaseProcessing &&
					isTrue(job, paymentsv1alpha1.ConditionStalled, paymentsv1alpha1.ReasonRetriesExhausted)
			},
			wantStatus: "Degraded",
			wantMessage: func(*paymentsv1alpha1.PaymentJob) types.GomegaMatcher {
				// Money may have moved: the job is never reported as failed.
				return And(ContainSubstring("may have been charged"), ContainSubstring("still being retried"),
					ContainSubstring(paymentsv1alpha1.ReasonRetriesExhausted), Not(ContainSubstring("Failed")))
			},
		},
	}
	for _, tt := range tests {
		var hs argoHealth
		s.Eventually(func(g Gomega) {
			// One read: the typed view and the script see the same status.
			u := getUnstructured(g, tt.ns, tt.job)
			var job paymentsv1alpha1.PaymentJob
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &job)).To(Succeed())
			g.Expect(tt.reached(&job)).To(BeTrue(), "the operator has not written the state yet")

			var err error
			hs, err = runHealthScript(script, u.Object)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(hs.status).To(Equal(tt.wantStatus))
			g.Expect(hs.message).To(tt.wantMessage(&job))
		}, timeout, 20*time.Millisecond).Should(Succeed(), tt.name)
		t.Logf("%s: %s %q", tt.name, hs.status, hs.message)
	}
	stuck.expectCharges(1, "the stalled job was charged once, at its first attempt")
}

// TestArgoCDHealthOnRealRefundStatuses runs the script on PaymentRefunds as
// the operator wrote them: refunded, refused beyond the charge, waiting for
// its payment, held for approval.
func TestArgoCDHealthOnRealRefundStatuses(t *testing.T) {
	script := readHealthScript(t)
	s := newScenario(t)
	s.create("invoice")
	s.create("held", suspended)
	s.waitForPhase("invoice", paymentsv1alpha1.PhaseCompleted)
	s.createRefund("partial", "invoice", 500)
	s.createRefund("too-much", "invoice", 5000)
	s.createRefund("early", "held", 100)
	s.createRefund("approval", "invoice", 100, func(spec *paymentsv1alpha1.PaymentRefundSpec) { spec.Suspend = ptr.To(true) })

	tests := []struct {
		name        string
		refund      string
		reached     func(rf *paymentsv1alpha1.PaymentRefund) bool
		wantStatus  string
		wantMessage func(rf *paymentsv1alpha1.PaymentRefund) types.GomegaMatcher
	}{
		{
			name: "refunded", refund: "partial",
			reached: func(rf *paymentsv1alpha1.PaymentRefund) bool {
				return rf.Status.Phase == paymentsv1alpha1.PhaseCompleted
			},
			wantStatus: "Healthy",
			wantMessage: func(rf *paymentsv1alpha1.PaymentRefund) types.GomegaMatcher {
				return Equal("Refunded 500 usd of " + rf.Status.Charge.ID + " as " + rf.Status.ProviderResponse.ID)
			},
		},
		{
			name: "beyond the charge", refund: "too-much",
			reached:    func(rf *paymentsv1alpha1.PaymentRefund) bool { return rf.Status.Phase == paymentsv1alpha1.PhaseFailed },
			wantStatus: "Degraded",
			wantMessage: func(rf *paymentsv1alpha1.PaymentRefund) types.GomegaMatcher {
				return Equal(paymentsv1alpha1.ReasonRefundExceedsCharge + ": " + rf.Status.Failure.Message)
			},
		},
		{
			name: "waiting for its payment", refund: "early",
			reached: func(rf *paymentsv1alpha1.PaymentRefund) bool {
				c := meta.FindStatusCondition(rf.Status.Conditions, paymentsv1alpha1.ConditionReady)
				return c != nil && c.Reason == paymentsv1alpha1.ReasonPaymentNotCompleted
			},
			wantStatus: "Progressing",
			wantMessage: func(rf *paymentsv1alpha1.PaymentRefund) types.GomegaMatcher {
				return And(Equal(meta.FindStatusCondition(rf.Status.Conditions, paymentsv1alpha1.ConditionReady).Message), ContainSubstring("held"))
			},
		},
		{
			name: "held for approval", refund: "approval",
			reached: func(rf *paymentsv1alpha1.PaymentRefund) bool {
				c := meta.FindStatusCondition(rf.Status.Conditions, paymentsv1alpha1.ConditionReady)
				return c != nil && c.Reason == paymentsv1alpha1.ReasonSuspended
			},
			wantStatus: "Suspended",
			wantMessage: func(rf *paymentsv1alpha1.PaymentRefund) types.GomegaMatcher {
				return Equal(meta.FindStatusCondition(rf.Status.Conditions, paymentsv1alpha1.ConditionReady).Message)
			},
		},
	}
	for _, tt := range tests {
		var hs argoHealth
		s.Eventually(func(g Gomega) {
			u := getUnstructuredKind(g, "PaymentRefund", s.ns, tt.refund)
			var rf paymentsv1alpha1.PaymentRefund
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &rf)).To(Succeed())
			g.Expect(tt.reached(&rf)).To(BeTrue(), "the operator has not written the state yet")

			var err error
			hs, err = runHealthScript(script, u.Object)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(hs.status).To(Equal(tt.wantStatus))
			g.Expect(hs.message).To(tt.wantMessage(&rf))
		}, timeout, 20*time.Millisecond).Should(Succeed(), tt.name)
		t.Logf("%s: %s %q", tt.name, hs.status, hs.message)
	}
	s.expectCharges(1, "the refunds charged nothing")
}

func TestArgoCDHealthEdgeCases(t *testing.T) {
	t.Parallel()
	script := readHealthScript(t)
	tests := []struct {
		name        string
		obj         string
		wantStatus  string
		wantMessage types.GomegaMatcher
	}{
		{
			name:        "no status",
			obj:         `{metadata: {name: a, generation: 1}, spec: {amount: 100, currency: usd}}`,
			wantStatus:  "Progressing",
			wantMessage: Equal("Waiting for the operator"),
		},
		{
			name:        "empty status",
			obj:         `{metadata: {generation: 1}, status: {}}`,
			wantStatus:  "Progressing",
			wantMessage: Equal("Waiting for the operator"),
		},
		{
			name:        "no metadata, no spec",
			obj:         `{status: {phase: Processing}}`,
			wantStatus:  "Progressing",
			wantMessage: Equal("Processing"),
		},
		{
			name: "observedGeneration behind a Completed job",
			obj: `{metadata: {generation: 2}, status: {phase: Completed, observedGeneration: 1,
				conditions: [{type: Ready, status: "True", reason: Succeeded}]}}`,
			wantStatus:  "Progressing",
			wantMessage: Equal("Waiting for the operator to observe generation 2"),
		},
		{
			name:        "Completed without conditions",
			obj:         `{spec: {amount: 500, currency: eur}, status: {phase: Completed, providerResponse: {id: pi_1}}}`,
			wantStatus:  "Healthy",
			wantMessage: Equal("Charged 500 eur as pi_1"),
		},
		{
			name: "Ready=True, replayed",
			obj: `{metadata: {generation: 3}, spec: {amount: 1, currency: jpy},
				status: {phase: Completed, observedGeneration: 3,
				providerResponse: {id: pi_2, amount: 1999, currency: usd, replayed: true},
				conditions: [{type: Ready, status: "True"}]}}`,
			wantStatus:  "Healthy",
			wantMessage: Equal("Charged 1999 usd as pi_2 (replayed)"),
		},
		{
			name:        "Completed without a provider response",
			obj:         `{status: {phase: Completed}}`,
			wantStatus:  "Healthy",
			wantMessage: Equal("Charged"),
		},
		{
			name:        "Failed with a failure",
			obj:         `{status: {phase: Failed, failure: {reason: InvalidRequest, message: amount too small}}}`,
			wantStatus:  "Degraded",
			wantMessage: Equal("InvalidRequest: amount too small"),
		},
		{
			name: "Failed without a failure",
			obj: `{status: {phase: Failed, conditions: [
				{type: Ready, status: "False", reason: CardDeclined, message: declined}]}}`,
			wantStatus:  "Degraded",
			wantMessage: Equal("CardDeclined: declined"),
		},
		{
			name:        "Failed with nothing else",
			obj:         `{status: {phase: Failed}}`,
			wantStatus:  "Degraded",
			wantMessage: Equal("Failed"),
		},
		{
			name: "Pending past its deadline",
			obj: `{status: {phase: Pending, conditions: [
				{type: Ready, status: "False", reason: DeadlineExceeded, message: not claimed in time},
				{type: Reconciling, status: "False", reason: DeadlineExceeded},
				{type: Stalled, status: "True", reason: DeadlineExceeded, message: not claimed in time}]}}`,
			wantStatus:  "Degraded",
			wantMessage: Equal("DeadlineExceeded: not claimed in time"),
		},
		{
			name: "Processing, retries exhausted",
			obj: `{status: {phase: Processing, conditions: [
				{type: Stalled, status: "True", reason: RetriesExhausted, message: attempt 7 uncertain}]}}`,
			wantStatus: "Degraded",
			wantMessage: And(ContainSubstring("may have been charged"), ContainSubstring("still being retried"),
				ContainSubstring("RetriesExhausted: attempt 7 uncertain"), Not(ContainSubstring("Failed"))),
		},
		{
			name: "Processing, request changed",
			obj: `{status: {phase: Processing, conditions: [
				{type: Stalled, status: "True", reason: RequestChanged, message: not charging again}]}}`,
			wantStatus:  "Degraded",
			wantMessage: And(ContainSubstring("may have been charged"), ContainSubstring("not sent again"), Not(ContainSubstring("Failed"))),
		},
		{
			name: "Processing, a bank debit settling",
			obj: `{status: {phase: Processing, conditions: [
				{type: Ready, status: "False", reason: AwaitingSettlement, message: Waiting for the provider to settle sepa_debit pi_1},
				{type: Reconciling, status: "True", reason: AwaitingSettlement}, {type: Stalled, status: "False"}]}}`,
			wantStatus:  "Progressing",
			wantMessage: Equal("Waiting for the provider to settle sepa_debit pi_1"),
		},
		{
			name: "Processing, a bank debit past its settlement deadline",
			obj: `{status: {phase: Processing, conditions: [
				{type: Stalled, status: "True", reason: SettlementOverdue, message: not settled by its deadline}]}}`,
			wantStatus: "Degraded",
			wantMessage: And(ContainSubstring("accepted it and has not settled it"), ContainSubstring("never sent again"),
				Not(ContainSubstring("may have been charged")), Not(ContainSubstring("retried"))),
		},
		{
			name: "Pending, suspended",
			obj: `{status: {phase: Pending, conditions: [
				{type: Ready, status: "False", reason: Suspended, message: spec.suspend is true}]}}`,
			wantStatus:  "Suspended",
			wantMessage: Equal("spec.suspend is true"),
		},
		{
			name: "Pending, provider not ready",
			obj: `{status: {phase: Pending, conditions: [
				{type: Ready, status: "False", reason: ProviderNotReady, message: "PaymentProvider \"x\" is not ready"},
				{type: Stalled, status: "False"}]}}`,
			wantStatus:  "Progressing",
			wantMessage: Equal(`PaymentProvider "x" is not ready`),
		},
		{
			name:        "Pending without conditions",
			obj:         `{status: {phase: Pending}}`,
			wantStatus:  "Progressing",
			wantMessage: Equal("Pending"),
		},
		{
			name:        "conditions with missing fields",
			obj:         `{status: {phase: Processing, conditions: [{}, {type: Ready}, {type: Stalled}, {status: "True"}]}}`,
			wantStatus:  "Progressing",
			wantMessage: Equal("Processing"),
		},
		{
			name:        "conditions of the wrong type",
			obj:         `{metadata: {generation: x}, status: {phase: Processing, observedGeneration: y, conditions: oops}}`,
			wantStatus:  "Progressing",
			wantMessage: Equal("Processing"),
		},
		{
			name:        "reconciling without a phase",
			obj:         `{status: {conditions: [{type: Reconciling, status: "True"}]}}`,
			wantStatus:  "Progressing",
			wantMessage: Equal("Reconciling"),
		},
		{
			name: "refund Completed, whole charge",
			obj: `{kind: PaymentRefund, spec: {paymentJobRef: {name: invoice}},
				status: {phase: Completed, charge: {id: pi_1, amount: 2000, currency: usd},
				providerResponse: {id: re_1, amount: 2000, currency: usd}}}`,
			wantStatus:  "Healthy",
			wantMessage: Equal("Refunded 2000 usd of pi_1 as re_1"),
		},
		{
			name: "refund Completed without a provider response",
			obj: `{kind: PaymentRefund, spec: {amount: 300},
				status: {phase: Completed, charge: {id: pi_1, amount: 2000, currency: eur}}}`,
			wantStatus:  "Healthy",
			wantMessage: Equal("Refunded 300 eur of pi_1"),
		},
		{
			name: "refund Completed by a replay",
			obj: `{kind: PaymentRefund, status: {phase: Completed, conditions: [{type: Ready, status: "True"}],
				providerResponse: {id: re_2, amount: 5, currency: jpy, replayed: true}}}`,
			wantStatus:  "Healthy",
			wantMessage: Equal("Refunded 5 jpy as re_2 (replayed)"),
		},
		{
			name: "refund Processing, retries exhausted",
			obj: `{kind: PaymentRefund, status: {phase: Processing, conditions: [
				{type: Stalled, status: "True", reason: RetriesExhausted, message: attempt 7 uncertain}]}}`,
			wantStatus: "Degraded",
			wantMessage: And(HavePrefix("The refund may have been made; the outcome is uncertain"),
				ContainSubstring("RetriesExhausted: attempt 7 uncertain"), Not(ContainSubstring("charged"))),
		},
		{
			name: "refund failed after it succeeded",
			obj: `{kind: PaymentRefund, status: {phase: Failed,
				failure: {reason: RefundFailedAfterSuccess, message: refund re_1 failed}}}`,
			wantStatus:  "Degraded",
			wantMessage: Equal("RefundFailedAfterSuccess: refund re_1 failed"),
		},
		{
			name:        "unknown phase",
			obj:         `{status: {phase: Refunded}}`,
			wantStatus:  "Unknown",
			wantMessage: ContainSubstring("Refunded"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			var obj map[string]any
			g.Expect(yaml.Unmarshal([]byte(tt.obj), &obj)).To(Succeed())
			hs, err := runHealthScript(script, obj)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(argoStatuses).To(ContainElement(hs.status))
			g.Expect(hs.status).To(Equal(tt.wantStatus))
			g.Expect(hs.message).To(tt.wantMessage)
		})
	}
}

func TestDocsEmbedTheHealthScript(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	script := readHealthScript(t)
	doc := readRepoFile(t, "docs", "gitops.md")

	// Find the argocd-cm snippet: the YAML block that holds the key.
	var snippets []string
	for _, block := range strings.Split(string(doc), "```yaml\n")[1:] {
		body, _, found := strings.Cut(block, "\n```")
		g.Expect(found).To(BeTrue(), "unterminated yaml block")
		if strings.Contains(body, healthKey) {
			// Cut took the newline that ends the block's last line.
			snippets = append(snippets, body+"\n")
		}
	}
	g.Expect(snippets).To(HaveLen(1), "docs/gitops.md has one argocd-cm snippet")

	// YAML removes the block's indentation: the value is the script itself.
	var cm struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Data map[string]string `json:"data"`
	}
	g.Expect(yaml.Unmarshal([]byte(snippets[0]), &cm)).To(Succeed())
	g.Expect(cm.Kind).To(Equal("ConfigMap"))
	g.Expect(cm.Metadata.Name).To(Equal("argocd-cm"))
	g.Expect(cm.Data).To(HaveKey(healthKey))
	g.Expect(cm.Data[healthKey]).To(Equal(script), "docs/gitops.md and config/argocd/health.lua differ")
	g.Expect(cm.Data).To(HaveKeyWithValue(refundHealthKey, script), "the same script checks PaymentRefunds")
}

// writeKubeconfig writes a kubeconfig for the envtest API server, with the
// administrator's credentials, and returns its path.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	cfg := env.Config
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthority:     cfg.CAFile,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos["admin"] = &clientcmdapi.AuthInfo{
		ClientCertificate:     cfg.CertFile,
		ClientCertificateData: cfg.CertData,
		ClientKey:             cfg.KeyFile,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
	}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "admin"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	NewWithT(t).Expect(clientcmd.WriteToFile(*kc, path)).To(Succeed())
	return path
}

func TestKubectlWaitForReady(t *testing.T) {
	s := newScenario(t)
	ns := s.ns
	ctx := context.Background()
	kubectl := filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl")
	_, err := os.Stat(kubectl)
	s.Expect(err).NotTo(HaveOccurred(), "kubectl is built into KUBEBUILDER_ASSETS by `make envtest-assets`")
	kubeconfig := writeKubeconfig(t)
	home := t.TempDir()
	command := func(ctx context.Context, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, kubectl, append(args,
			"--kubeconfig", kubeconfig, "--cache-dir", filepath.Join(home, "cache"))...)
		cmd.Env = append(os.Environ(), "HOME="+home, "KUBECONFIG=")
		return cmd
	}

	s.create("invoice-9", suspended)
	s.Eventually(func(g Gomega) {
		g.Expect(readyCondition(g, ns, "invoice-9")).To(HaveField("Reason", paymentsv1alpha1.ReasonSuspended))
	}, timeout).Should(Succeed())

	waitCtx, cancel := context.WithCancel(ctx)
	var stdout, stderr bytes.Buffer
	wait := command(waitCtx, "wait", "--for=condition=Ready", "pj/invoice-9", "-n", ns, "--timeout=60s")
	wait.Stdout, wait.Stderr = &stdout, &stderr
	s.Expect(wait.Start()).To(Succeed())
	done := make(chan struct{})
	var waitErr error
	go func() {
		defer close(done)
		waitErr = wait.Wait()
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	// While the job is suspended it is not Ready, and kubectl keeps waiting.
	s.Consistently(done, 2*time.Second, 50*time.Millisecond).ShouldNot(BeClosed(),
		"kubectl wait returned while the job was suspended: %s %s", &stdout, &stderr)
	select {
	case <-done:
		t.Fatalf("kubectl wait returned while the job was suspended: %s %s", &stdout, &stderr)
	default:
	}

	s.update("invoice-9", func(job *paymentsv1alpha1.PaymentJob) { job.Spec.Suspend = ptr.To(false) })
	s.Eventually(done, timeout).Should(BeClosed())
	s.Expect(waitErr).NotTo(HaveOccurred(), "kubectl wait: %s", &stderr)
	s.Expect(stdout.String()).To(ContainSubstring("paymentjob.payments.idempotency.dev/invoice-9 condition met"))
	job := s.job("invoice-9")
	s.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted))

	// The printer columns show the outcome.
	out, err := command(ctx, "get", "pj", "-n", ns).Output()
	s.Expect(err).NotTo(HaveOccurred())
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	s.Expect(lines).To(HaveLen(2), string(out))
	s.Expect(strings.Fields(lines[0])).To(Equal(
		[]string{"NAME", "PHASE", "AMOUNT", "CURRENCY", "PROVIDER", "CHARGE", "ATTEMPTS", "AGE"}))
	s.Expect(strings.Fields(lines[1])[:7]).To(Equal(
		[]string{"invoice-9", "Completed", "2000", "usd", providerName, job.Status.ProviderResponse.ID, "1"}))
}
