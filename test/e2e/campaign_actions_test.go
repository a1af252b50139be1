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
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"pgregory.net/rapid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/campaign"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/sandboxproc"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// processAction is one thing a user or the world can do to the processes,
// and how often.
type processAction struct {
	name   string
	weight int
	do     func(*rapid.T)
}

// The weights, out of 20. The managers work all the time on the wall
// clock, so no action runs a pass: every step sets the stage, and waiting
// (2) gives them the time to act between the others. Users create jobs
// and refunds (7) often enough that most histories hold several objects
// sharing keys (DrawJob) and charges. The faults that threaten
// exactly-once most, a kill -9 of a replica in flight and a change of
// the sandbox's faults (answers lost after it committed, 5xx and 429
// before it, or none), weigh 2 each; forgetting keys, a prune and a re-sync, an approval, a
// resolution and a dashboard refund, which the protocol meets on
// ordinary days, weigh 1 each.
func (w *processWorld) actions() []processAction {
	return []processAction{
		{"createJob", 4, w.createJob},
		{"createRefund", 2, w.createRefund},
		{"raceRefunds", 1, w.raceRefunds},
		{"gitopsPrune", 1, w.gitopsPrune},
		{"gitopsSync", 1, w.gitopsSync},
		{"approve", 1, w.approve},
		{"resolve", 1, w.resolve},
		{"kill", 2, w.kill},
		{"faults", 2, w.faults},
		{"forgetKeys", 1, w.forgetKeys},
		{"dashboardRefund", 1, w.dashboardRefund},
		{"wait", 2, w.wait},
	}
}

// repeatMap is the actions as rapid's Repeat takes them: an action of
// weight n under n keys, since Repeat draws keys uniformly; "" is the
// oracle's safety check after every step.
func (w *processWorld) repeatMap() map[string]func(*rapid.T) {
	m := map[string]func(*rapid.T){"": w.checkSafety}
	for _, a := range w.actions() {
		do := func(t *rapid.T) {
			w.tally.steps++
			w.tally.skipped++
			a.do(t)
			w.tally.skipped--
		}
		m[a.name] = do
		for i := 2; i <= a.weight; i++ {
			m[fmt.Sprintf("%s#%d", a.name, i)] = do
		}
	}
	return m
}

// Users.

// createJob applies a new PaymentJob drawn as the in-process campaign
// draws one.
func (w *processWorld) createJob(t *rapid.T) {
	j := campaign.DrawJob(t, w.s.namespaces, fmt.Sprintf("job-%d", len(w.m.Jobs())))
	w.m.AddJob(j)
	w.logf(t, "create %s", j)
	w.apply(t, j.Object())
}

// createRefund applies a PaymentRefund of a job applied earlier: part of
// its charge, all of it, or all of it again.
func (w *processWorld) createRefund(t *rapid.T) {
	j := w.drawManifest(t)
	amount, how := campaign.DrawRefundAmount(t, j.Amount)
	w.refund(t, j, amount, how)
}

// raceRefunds applies two refunds of one job that each take more than
// half of it: they race for the last of the charge, and one must lose.
func (w *processWorld) raceRefunds(t *rapid.T) {
	j := w.drawManifest(t)
	w.refund(t, j, ptr.To(j.Amount/2+1), "racing")
	w.refund(t, j, ptr.To(j.Amount/2+1), "racing")
}

// drawManifest draws a job manifest, or skips the step when there is none.
func (w *processWorld) drawManifest(t *rapid.T) campaign.JobManifest {
	jobs := w.m.Jobs()
	if len(jobs) == 0 {
		t.Skip("no job to refund")
	}
	return rapid.SampledFrom(jobs).Draw(t, "job")
}

// refund applies a refund of amount (nil: the whole charge) of job j.
func (w *processWorld) refund(t *rapid.T, j campaign.JobManifest, amount *int64, how string) {
	r := campaign.RefundManifest{Namespace: j.Namespace, Name: fmt.Sprintf("refund-%d", len(w.m.Refunds())), Job: j.Name, Amount: amount}
	w.m.AddRefund(r)
	if amount == nil {
		w.logf(t, "create refund %s/%s of %s, the whole charge (%s)", r.Namespace, r.Name, j.Name, how)
	} else {
		w.logf(t, "create refund %s/%s of %s, amount %d (%s)", r.Namespace, r.Name, j.Name, *amount, how)
	}
	w.apply(t, r.Object())
}

// apply creates obj as a user would.
func (w *processWorld) apply(t *rapid.T, obj client.Object) {
	if err := w.s.cluster.k8s.Create(context.Background(), obj); err != nil {
		t.Fatalf("cannot apply %s/%s: %v", obj.GetNamespace(), obj.GetName(), err)
	}
}

// gitopsPrune deletes a job, as a GitOps tool prunes it; its manifest
// stays in Git.
func (w *processWorld) gitopsPrune(t *rapid.T) {
	j := w.pickJob(t, func(*paymentsv1alpha1.PaymentJob) bool { return true })
	w.logf(t, "delete PaymentJob %s/%s (prune) in phase %q", j.Namespace, j.Name, j.Status.Phase)
	if err := w.s.cluster.k8s.Delete(context.Background(), j); client.IgnoreNotFound(err) != nil {
		t.Fatalf("cannot delete %s/%s: %v", j.Namespace, j.Name, err)
	}
}

// gitopsSync re-creates every job whose manifest is in Git and whose
// object is gone, from the same manifest.
func (w *processWorld) gitopsSync(t *rapid.T) {
	synced := w.resync()
	if len(synced) == 0 {
		t.Skip("nothing to re-create")
	}
	w.logf(t, "gitops sync re-creates %v", synced)
}

// resync re-creates the jobs whose object is gone, and names them.
func (w *processWorld) resync() []string {
	var synced []string
	for _, j := range w.m.Jobs() {
		err := w.s.cluster.k8s.Get(context.Background(), types.NamespacedName{Namespace: j.Namespace, Name: j.Name}, &paymentsv1alpha1.PaymentJob{})
		if !apierrors.IsNotFound(err) {
			continue
		}
		if err := w.s.cluster.k8s.Create(context.Background(), j.Object()); err != nil && !apierrors.IsAlreadyExists(err) {
			w.rt.Fatalf("cannot re-create %s/%s: %v", j.Namespace, j.Name, err)
		}
		synced = append(synced, j.Namespace+"/"+j.Name)
	}
	return synced
}

// approve is a person approving a suspended job: spec.suspend=false.
func (w *processWorld) approve(t *rapid.T) {
	j := w.pickJob(t, func(j *paymentsv1alpha1.PaymentJob) bool {
		return j.Spec.Suspend != nil && *j.Spec.Suspend && !terminal(j)
	})
	w.logf(t, "a person approves PaymentJob %s/%s (spec.suspend=false)", j.Namespace, j.Name)
	w.patch(t, j, `{"spec":{"suspend":false}}`)
}

// resolve is a person resolving an unfinished job by its annotation:
// charged= the charge under its key (right), another charge or one that
// does not exist (wrong), or not-charged (right only when nothing was
// charged under its key).
func (w *processWorld) resolve(t *rapid.T) {
	j := w.pickJob(t, func(j *paymentsv1alpha1.PaymentJob) bool { return !terminal(j) })
	b, err := w.s.sandbox.Books(context.Background())
	if err != nil {
		t.Fatalf("%v", err)
	}
	key := w.manifest(t, j.Namespace, j.Name).SentKey()
	ids := make([]string, 0, 1+len(b.Intents))
	ids = append(ids, "pi_doesnotexist")
	charged := ""
	for _, in := range b.Intents {
		ids = append(ids, in.ID)
		if in.IdempotencyKey == key && in.Status == sandbox.StatusSucceeded {
			charged = in.ID
		}
	}
	value := "not-charged"
	if rapid.Bool().Draw(t, "charged") {
		value = "charged=" + rapid.SampledFrom(ids).Draw(t, "id")
	}
	w.logf(t, "a person resolves PaymentJob %s/%s (phase %q) as %q; the sandbox holds %q under its key %s",
		j.Namespace, j.Name, j.Status.Phase, value, charged, key)
	annotations, _ := json.Marshal(map[string]string{
		paymentsv1alpha1.AnnotationResolve: value, paymentsv1alpha1.AnnotationResolvedBy: "alice@example.com"})
	w.patch(t, j, `{"metadata":{"annotations":`+string(annotations)+`}}`)
}

// patch merge-patches the job as a person's kubectl does.
func (w *processWorld) patch(t *rapid.T, j *paymentsv1alpha1.PaymentJob, patch string) {
	err := w.s.cluster.k8s.Patch(context.Background(), j, client.RawPatch(types.MergePatchType, []byte(patch)))
	if client.IgnoreNotFound(err) != nil {
		t.Fatalf("cannot patch %s/%s: %v", j.Namespace, j.Name, err)
	}
}

// pickJob draws a job of the history that the API server holds and that
// ok accepts, or skips the step when there is none.
func (w *processWorld) pickJob(t *rapid.T, ok func(*paymentsv1alpha1.PaymentJob) bool) *paymentsv1alpha1.PaymentJob {
	b, err := w.read()
	if err != nil {
		t.Fatalf("%v", err)
	}
	var of []*paymentsv1alpha1.PaymentJob
	for i := range b.jobs {
		if b.jobs[i].DeletionTimestamp == nil && ok(&b.jobs[i]) {
			of = append(of, &b.jobs[i])
		}
	}
	if len(of) == 0 {
		t.Skip("no job to act on")
	}
	slices.SortFunc(of, func(a, b *paymentsv1alpha1.PaymentJob) int {
		return cmp.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return rapid.SampledFrom(of).Draw(t, "job")
}

// manifest is the manifest of the job ns/name.
func (w *processWorld) manifest(t *rapid.T, ns, name string) campaign.JobManifest {
	for _, j := range w.m.Jobs() {
		if j.Namespace == ns && j.Name == name {
			return j
		}
	}
	t.Fatalf("no manifest of job %s/%s", ns, name)
	return campaign.JobManifest{}
}

// The world.

// kill SIGKILLs a replica and starts another: every in-memory state lost,
// claims in flight left to expire.
func (w *processWorld) kill(t *rapid.T) {
	i := rapid.IntRange(0, len(w.managers)-1).Draw(t, "manager")
	old := w.managers[i]
	old.Kill()
	w.managers[i] = w.startManager()
	w.logf(t, "kill -9 manager %d (%s); %s replaces it", i, old.Name, w.managers[i].Name)
}

// faults changes the sandbox's weather until the next change or the end
// of the history: a share of its requests answered with a fault (answers
// lost after it committed, 5xx before it committed, or 429s), or none.
// The managers meet it as they work, during the steps that follow.
func (w *processWorld) faults(t *rapid.T) {
	kind := rapid.SampledFrom([]string{"none", "after-commit", "before-commit", "rate-limit"}).Draw(t, "fault")
	rate := rapid.SampledFrom([]float64{0.2, 0.5}).Draw(t, "rate")
	rates := map[string]float64{kind: rate}
	if err := w.s.sandbox.SetFaults(context.Background(), rates["before-commit"], rates["after-commit"], rates["rate-limit"]); err != nil {
		t.Fatalf("%v", err)
	}
	if kind == "none" {
		w.logf(t, "the sandbox answers every request without a fault")
		return
	}
	w.logf(t, "the sandbox answers %.0f%% of its requests with %s faults from now on", rate*100, kind)
}

// forgetKeys makes the sandbox forget every decided idempotency key, as
// Stripe does after 24 hours: only in a history whose managers trust its
// memory for no time.
func (w *processWorld) forgetKeys(t *rapid.T) {
	if !w.forgets {
		t.Skip("the managers trust the provider to remember keys for a day")
	}
	n, err := w.s.sandbox.ForgetKeys(context.Background())
	if err != nil {
		t.Fatalf("%v", err)
	}
	w.logf(t, "the sandbox forgets its %d decided keys", n)
}

// dashboardRefund refunds part of a charge at the sandbox directly, as a
// person does in its dashboard: money moved behind the operator's back.
func (w *processWorld) dashboardRefund(t *rapid.T) {
	b, err := w.s.sandbox.Books(context.Background())
	if err != nil {
		t.Fatalf("%v", err)
	}
	refunded := map[string]int64{}
	for _, r := range b.Refunds {
		if r.Status != sandbox.RefundStatusFailed {
			refunded[r.PaymentIntent] += r.Amount
		}
	}
	var open []sandbox.Intent
	for _, in := range b.Intents {
		if in.Status == sandbox.StatusSucceeded && in.Amount > refunded[in.ID] {
			open = append(open, in)
		}
	}
	if len(open) == 0 {
		t.Skip("no charge to refund in the dashboard")
	}
	in := rapid.SampledFrom(open).Draw(t, "charge")
	amount := rapid.Int64Range(1, in.Amount-refunded[in.ID]).Draw(t, "amount")
	w.dashboard++
	key := fmt.Sprintf("dashboard-%d", w.dashboard)
	status, err := postDashboardRefund(w.s.sandbox.URL, key, in.ID, amount)
	w.logf(t, "a person refunds %d of %s (key %s) in the dashboard: %s %v", amount, in.IdempotencyKey, key, status, err)
}

// postDashboardRefund posts a refund to the sandbox's Stripe API and
// returns the answer's status.
func postDashboardRefund(base, key, intent string, amount int64) (string, error) {
	form := url.Values{"payment_intent": {intent}, "amount": {fmt.Sprint(amount)}}
	ctx, cancel := context.WithTimeout(context.Background(), sandboxRequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/refunds", strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+sandboxproc.APIKey)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Status, nil
}

// wait lets the managers work for a moment.
func (w *processWorld) wait(t *rapid.T) {
	d := rapid.SampledFrom([]time.Duration{200 * time.Millisecond, time.Second, 3 * time.Second}).Draw(t, "for")
	w.logf(t, "wait %s", d)
	// The wait is the action: a schedule, not a wait on state.
	<-time.After(d)
}
