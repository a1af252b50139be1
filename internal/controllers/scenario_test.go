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

// The scenario every controller test starts from, and the waits and reads
// of the API server that the tests share.

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentjob"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/sandboxprovider"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// scenario is the setting of one controller test: namespaces of its own,
// each with the credentials Secret and the PaymentProvider "sandbox"; a
// sandbox engine that charges; and the managers that watch the namespaces.
// It asserts for the test, as a Gomega.
//
//	s := newScenario(t)                        // parallel; one namespace, one manager
//	job := s.run("invoice", PhaseCompleted)    // create the job, wait for the phase
//	s.Expect(job.Status.Attempts).To(Equal(int32(1)))
//	s.expectCharges(1)
//	s.expectEvent("invoice", paymentsv1alpha1.ReasonSucceeded)
type scenario struct {
	*WithT
	t *testing.T
	// ns is the test's namespace, the first of namespaces.
	ns         string
	namespaces []string
	engine     *sandbox.Engine
	// sandbox is the in-process provider over engine. Managers charge
	// through it unless the scenario or their managerConfig says otherwise;
	// it counts their calls either way (see withoutLookups).
	sandbox *sandboxprovider.Provider
	// url is the sandbox's HTTP server with overHTTP; empty otherwise.
	url string
	// manager is the manager newScenario started; nil withoutManager.
	manager *testManager
	// defaults is what start fills in a managerConfig that leaves it out:
	// the namespaces and the provider (or adapter factory).
	defaults managerConfig
}

// scenarioSetup is what the options of newScenario change.
type scenarioSetup struct {
	serial     bool
	namespaces int
	noSecret   bool
	engine     []sandbox.Option
	noManager  bool
	http       bool
	noLookups  bool
	provider   []func(*paymentsv1alpha1.PaymentProvider)
	manager    managerConfig
}

// scenarioOption changes the scenario newScenario builds.
type scenarioOption func(*scenarioSetup)

// serial keeps the test from running alongside the parallel ones: for a
// test that compares the shared registry's counters, which every manager of
// the package counts into.
func serial() scenarioOption { return func(s *scenarioSetup) { s.serial = true } }

// withNamespaces gives the scenario n namespaces, all watched by its
// managers and charged at the same engine.
func withNamespaces(n int) scenarioOption { return func(s *scenarioSetup) { s.namespaces = n } }

// withoutSecret leaves the credentials Secret out: the provider is not
// Ready until the test creates one.
func withoutSecret() scenarioOption { return func(s *scenarioSetup) { s.noSecret = true } }

// withEngine builds the sandbox engine with opts.
func withEngine(opts ...sandbox.Option) scenarioOption {
	return func(s *scenarioSetup) { s.engine = append(s.engine, opts...) }
}

// withoutManager starts no manager: the test prepares the namespace first
// and starts one with scenario.start.
func withoutManager() scenarioOption { return func(s *scenarioSetup) { s.noManager = true } }

// overHTTP serves the engine over HTTP on loopback, points the providers
// at it, and has the managers build the real adapters (loopbackAdapters).
func overHTTP() scenarioOption { return func(s *scenarioSetup) { s.http = true } }

// withoutLookups has the managers charge through a provider that cannot
// look keys up: a company's payment service with nothing but a charge call.
func withoutLookups() scenarioOption { return func(s *scenarioSetup) { s.noLookups = true } }

// withManager starts the scenario's manager with cfg, completed as start
// completes it.
func withManager(cfg managerConfig) scenarioOption { return func(s *scenarioSetup) { s.manager = cfg } }

// withProvider changes the namespaces' PaymentProvider with mutate before
// the manager starts.
func withProvider(mutate func(*paymentsv1alpha1.PaymentProvider)) scenarioOption {
	return func(s *scenarioSetup) { s.provider = append(s.provider, mutate) }
}

// chargeOnly is a provider with a charge call only: no lookup, no settle,
// no account.
type chargeOnly struct{ p *sandboxprovider.Provider }

func (c chargeOnly) Charge(ctx context.Context, key string, req payment.ChargeRequest) (payment.Outcome, error) {
	return c.p.Charge(ctx, key, req)
}

// parallelTests are the tests a scenario made parallel: a test may build
// more than one scenario, and t.Parallel may be called once.
var parallelTests sync.Map

// newScenario makes the test parallel (unless serial: every scenario has
// namespaces of its own), builds the scenario and, unless withoutManager,
// starts its manager. Everything it starts stops when the test ends.
func newScenario(t *testing.T, opts ...scenarioOption) *scenario {
	t.Helper()
	setup := scenarioSetup{namespaces: 1}
	for _, opt := range opts {
		opt(&setup)
	}
	if _, already := parallelTests.LoadOrStore(t, true); !already {
		t.Cleanup(func() { parallelTests.Delete(t) })
		if !setup.serial {
			t.Parallel()
		}
	}
	s := &scenario{WithT: NewWithT(t), t: t, engine: sandbox.NewEngine(setup.engine...)}
	s.sandbox = sandboxprovider.NewProvider(s.engine)
	for range setup.namespaces {
		s.namespaces = append(s.namespaces, newNamespace(t, !setup.noSecret))
	}
	s.ns = s.namespaces[0]
	s.defaults.namespaces = s.namespaces
	switch {
	case setup.http:
		server := httptest.NewServer(sandbox.NewServer(s.engine, sandbox.ServerOptions{}))
		t.Cleanup(server.Close)
		s.url = server.URL
		for _, ns := range s.namespaces {
			updateProvider(s, ns, func(pp *paymentsv1alpha1.PaymentProvider) { pp.Spec.Stripe.APIBase = server.URL })
		}
		s.defaults.build = loopbackAdapters()
	case setup.noLookups:
		s.defaults.provider = chargeOnly{s.sandbox}
	default:
		s.defaults.provider = s.sandbox
	}
	for _, ns := range s.namespaces {
		for _, mutate := range setup.provider {
			updateProvider(s, ns, mutate)
		}
	}
	if !setup.noManager {
		s.manager = s.start(setup.manager)
	}
	return s
}

// start starts another manager on the scenario's namespaces. cfg without
// namespaces gets the scenario's; without a provider and an adapter
// factory, the scenario's provider (or factory, overHTTP).
func (s *scenario) start(cfg managerConfig) *testManager {
	s.t.Helper()
	if cfg.namespaces == nil {
		cfg.namespaces = s.defaults.namespaces
	}
	if cfg.provider == nil && cfg.build == nil {
		cfg.provider, cfg.build = s.defaults.provider, s.defaults.build
	}
	return startManager(s.t, cfg)
}

// create creates the job name in the scenario's namespace from jobSpec,
// changed by mutate.
func (s *scenario) create(name string, mutate ...func(*paymentsv1alpha1.PaymentJobSpec)) *paymentsv1alpha1.PaymentJob {
	s.t.Helper()
	return createJob(s.t, s.ns, name, mutate...)
}

// run creates the job name and waits until it reaches phase.
func (s *scenario) run(name string, phase paymentsv1alpha1.PaymentJobPhase, mutate ...func(*paymentsv1alpha1.PaymentJobSpec)) *paymentsv1alpha1.PaymentJob {
	s.t.Helper()
	s.create(name, mutate...)
	return s.waitForPhase(name, phase)
}

// get reads the job name from the API server, for g.
func (s *scenario) get(g Gomega, name string) *paymentsv1alpha1.PaymentJob {
	return getJob(g, s.ns, name)
}

// job reads the job name from the API server.
func (s *scenario) job(name string) *paymentsv1alpha1.PaymentJob { return s.get(s, name) }

// waitForPhase waits until the job name reaches phase and returns it.
func (s *scenario) waitForPhase(name string, phase paymentsv1alpha1.PaymentJobPhase) *paymentsv1alpha1.PaymentJob {
	s.t.Helper()
	return waitForPhase(s.t, s.ns, name, phase)
}

// waitForFinished waits until the job name is finished and returns it.
func (s *scenario) waitForFinished(name string) *paymentsv1alpha1.PaymentJob {
	s.t.Helper()
	return waitForFinished(s.t, s.ns, name)
}

// waitForStall waits until the job name is Stalled with reason and
// returns it.
func (s *scenario) waitForStall(name, reason string) *paymentsv1alpha1.PaymentJob {
	s.t.Helper()
	return waitForStall(s.t, s.ns, name, reason)
}

// update changes the job name with mutate and writes it, again on a
// conflict, and returns what it wrote.
func (s *scenario) update(name string, mutate func(*paymentsv1alpha1.PaymentJob)) *paymentsv1alpha1.PaymentJob {
	s.t.Helper()
	return s.write(name, mutate, func(ctx context.Context, job *paymentsv1alpha1.PaymentJob) error {
		return k8sClient.Update(ctx, job)
	})
}

// updateStatus is update for the status.
func (s *scenario) updateStatus(name string, mutate func(*paymentsv1alpha1.PaymentJob)) {
	s.t.Helper()
	s.write(name, mutate, func(ctx context.Context, job *paymentsv1alpha1.PaymentJob) error {
		return k8sClient.Status().Update(ctx, job)
	})
}

func (s *scenario) write(name string, mutate func(*paymentsv1alpha1.PaymentJob),
	write func(context.Context, *paymentsv1alpha1.PaymentJob) error) *paymentsv1alpha1.PaymentJob {
	s.t.Helper()
	var job *paymentsv1alpha1.PaymentJob
	s.Eventually(func(g Gomega) {
		job = s.get(g, name)
		mutate(job)
		g.Expect(write(context.Background(), job)).To(Succeed())
	}, timeout, 20*time.Millisecond).Should(Succeed(), "cannot write job %s/%s", s.ns, name)
	return job
}

// resolve sets the job's resolve annotation to value.
func (s *scenario) resolve(name, value string) {
	s.t.Helper()
	s.update(name, func(job *paymentsv1alpha1.PaymentJob) {
		metav1.SetMetaDataAnnotation(&job.ObjectMeta, paymentsv1alpha1.AnnotationResolve, value)
	})
}

// recorded returns the outcome the manager's ledger holds for the job name
// in ns.
func (m *testManager) recorded(g Gomega, ns, name string) ledger.Entry {
	e, found, err := m.ledger.Find(context.Background(), payment.SentKey(ns, name))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeTrue(), "the ledger holds no outcome for %s/%s", ns, name)
	return e
}

// expectCharges checks that the engine made exactly n charges.
func (s *scenario) expectCharges(n int64, explain ...any) {
	s.t.Helper()
	s.Expect(s.engine.Stats().Charges).To(Equal(n), explain...)
}

// expectEvent waits until the job name has an event with reason.
func (s *scenario) expectEvent(name, reason string) {
	s.t.Helper()
	s.Eventually(func(g Gomega) []string { return eventReasons(g, s.ns, name) }, timeout).
		Should(ContainElement(reason), "job %s/%s has no %s event", s.ns, name, reason)
}

// deadHolder is the claim holder of a process that died.
const deadHolder = "dead/00000000"

// leftBehind creates the job name and writes, with no manager at work on
// it, what a process that died left: the finalizer when finalizer is set,
// and the status of a claim made at claimed, with the outcome o recorded
// when o is not nil. The writes are the operator's own (ClaimStatus,
// CompletedStatus).
func (s *scenario) leftBehind(name string, claimed time.Time, finalizer bool, o *payment.Outcome) {
	s.t.Helper()
	ctx := context.Background()
	job := s.create(name)
	if finalizer {
		controllerutil.AddFinalizer(job, paymentsv1alpha1.Finalizer)
		s.Expect(k8sClient.Update(ctx, job)).To(Succeed())
	}
	paymentjob.ClaimStatus(job, paymentjob.ChargeOf(job), deadHolder, claimed, time.Minute, paymentsv1alpha1.ReasonClaimed)
	if o != nil {
		paymentjob.CompletedStatus(job, *o, false, claimed)
	}
	s.Expect(k8sClient.Status().Update(ctx, job)).To(Succeed())
}

// chargeOf is what the job name in ns with jobSpec sends.
func chargeOf(ns, name string) paymentjob.Charge {
	return paymentjob.ChargeOf(&paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: jobSpec()})
}

func getJob(g Gomega, ns, name string) *paymentsv1alpha1.PaymentJob {
	var job paymentsv1alpha1.PaymentJob
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &job)).To(Succeed())
	return &job
}

// waitForJob waits until the job passes check and returns it; what names
// the state in the message of a timeout.
func waitForJob(t *testing.T, ns, name, what string, check func(Gomega, *paymentsv1alpha1.PaymentJob)) *paymentsv1alpha1.PaymentJob {
	t.Helper()
	var job *paymentsv1alpha1.PaymentJob
	NewWithT(t).Eventually(func(g Gomega) {
		job = getJob(g, ns, name)
		check(g, job)
	}, timeout, 20*time.Millisecond).Should(Succeed(), "job %s/%s never %s", ns, name, what)
	return job
}

// waitForPhase waits until the job reaches phase and returns it.
func waitForPhase(t *testing.T, ns, name string, phase paymentsv1alpha1.PaymentJobPhase) *paymentsv1alpha1.PaymentJob {
	t.Helper()
	return waitForJob(t, ns, name, "reached "+string(phase), func(g Gomega, job *paymentsv1alpha1.PaymentJob) {
		g.Expect(job.Status.Phase).To(Equal(phase))
	})
}

// waitForFinished waits until the job is released: the finished label set
// and the finalizer gone, in the same write.
func waitForFinished(t *testing.T, ns, name string) *paymentsv1alpha1.PaymentJob {
	t.Helper()
	return waitForJob(t, ns, name, "was finished", func(g Gomega, job *paymentsv1alpha1.PaymentJob) {
		g.Expect(job.Labels).To(HaveKeyWithValue(paymentsv1alpha1.LabelFinished, "true"))
		g.Expect(job.Finalizers).To(BeEmpty())
	})
}

// waitForStall waits until the job is Stalled with reason and returns it.
func waitForStall(t *testing.T, ns, name, reason string) *paymentsv1alpha1.PaymentJob {
	t.Helper()
	return waitForJob(t, ns, name, "stalled with "+reason, func(g Gomega, job *paymentsv1alpha1.PaymentJob) {
		expectStalled(g, job, reason)
	})
}

// expectStalled checks that the job is Stalled with reason, or with any
// reason when reason is empty.
func expectStalled(g Gomega, job *paymentsv1alpha1.PaymentJob, reason string) {
	stalled := condition(job, paymentsv1alpha1.ConditionStalled)
	g.Expect(stalled).NotTo(BeNil(), "no Stalled condition")
	g.Expect(stalled.Status).To(Equal(metav1.ConditionTrue), "not Stalled: %s", stalled.Message)
	if reason != "" {
		g.Expect(stalled.Reason).To(Equal(reason))
	}
}

// waitForJobs waits until n jobs of ns are done and returns the jobs of
// ns; done may also check the jobs that are not yet done.
func waitForJobs(t *testing.T, ns string, n int, done func(Gomega, *paymentsv1alpha1.PaymentJob) bool) []paymentsv1alpha1.PaymentJob {
	t.Helper()
	var list paymentsv1alpha1.PaymentJobList
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(k8sClient.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
		count := 0
		for i := range list.Items {
			if done(g, &list.Items[i]) {
				count++
			}
		}
		g.Expect(count).To(Equal(n))
	}, 3*timeout, 100*time.Millisecond).Should(Succeed(), func() string { return unfinishedJobs(ns) })
	return list.Items
}

// unfinishedJobs describes the jobs of ns that are not finished, for the
// message of a test that timed out waiting for them.
func unfinishedJobs(ns string) string {
	var list paymentsv1alpha1.PaymentJobList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, j := range list.Items {
		if j.Labels[paymentsv1alpha1.LabelFinished] == "true" {
			continue
		}
		reason := ""
		if c := condition(&j, paymentsv1alpha1.ConditionReady); c != nil {
			reason = c.Reason + ": " + c.Message
		}
		fmt.Fprintf(&b, "%s: phase %q, attempts %d, finalizers %v, deleting %t, %s\n",
			j.Name, j.Status.Phase, j.Status.Attempts, j.Finalizers, !j.DeletionTimestamp.IsZero(), reason)
	}
	return b.String()
}

// jobNames returns name-0 ... name-(n-1).
func jobNames(name string, n int) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", name, i)
	}
	return names
}

// waitForGone waits until obj no longer exists.
func waitForGone(g Gomega, obj client.Object, explain ...any) {
	g.Eventually(func() error {
		return k8sClient.Get(context.Background(), client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
	}, timeout, 20*time.Millisecond).Should(Satisfy(apierrors.IsNotFound), explain...)
}

// deleteJob deletes the job and waits until it is gone.
func deleteJob(t *testing.T, job *paymentsv1alpha1.PaymentJob) {
	t.Helper()
	g := NewWithT(t)
	g.Expect(client.IgnoreNotFound(k8sClient.Delete(context.Background(), job))).To(Succeed())
	waitForGone(g, job)
}

func readyCondition(g Gomega, ns, name string) *metav1.Condition {
	c := condition(getJob(g, ns, name), paymentsv1alpha1.ConditionReady)
	g.Expect(c).NotTo(BeNil())
	return c
}

// getProvider reads the namespace's PaymentProvider.
func getProvider(g Gomega, ns string) *paymentsv1alpha1.PaymentProvider {
	var pp paymentsv1alpha1.PaymentProvider
	g.Expect(k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: providerName}, &pp)).To(Succeed())
	return &pp
}

// updateProvider changes the namespace's PaymentProvider with mutate and
// writes it, again on a conflict.
func updateProvider(g Gomega, ns string, mutate func(*paymentsv1alpha1.PaymentProvider)) {
	g.Eventually(func(g Gomega) {
		pp := getProvider(g, ns)
		mutate(pp)
		g.Expect(k8sClient.Update(context.Background(), pp)).To(Succeed())
	}, timeout).Should(Succeed())
}

// lookupNever turns the provider's lookups off: spec.lookup.policy Never.
func lookupNever(pp *paymentsv1alpha1.PaymentProvider) {
	pp.Spec.Lookup = &paymentsv1alpha1.ProviderLookup{Policy: paymentsv1alpha1.LookupNever}
}

// providerReady returns the Ready condition of the namespace's provider.
func providerReady(g Gomega, ns string) metav1.Condition {
	ready := meta.FindStatusCondition(getProvider(g, ns).Status.Conditions, paymentsv1alpha1.ConditionReady)
	g.Expect(ready).NotTo(BeNil(), "no Ready condition yet")
	return *ready
}

// eventsAbout lists the events of ns about the object name, or about
// every object when name is empty, oldest first.
func eventsAbout(g Gomega, ns, name string) []eventsv1.Event {
	var list eventsv1.EventList
	g.Expect(k8sClient.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	var about []eventsv1.Event
	for _, e := range list.Items {
		if name == "" || e.Regarding.Name == name {
			about = append(about, e)
		}
	}
	return about
}

// eventReasons lists the reasons of the events about a job, oldest first.
func eventReasons(g Gomega, ns, name string) []string {
	events := eventsAbout(g, ns, name)
	reasons := make([]string, 0, len(events))
	for _, e := range events {
		reasons = append(reasons, e.Reason)
	}
	return reasons
}

// notes lists the notes of the job's events with reason.
func notes(g Gomega, ns, name, reason string) []string {
	var notes []string
	for _, e := range eventsAbout(g, ns, name) {
		if e.Reason == reason {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// refusals lists the messages of the job's ResolutionRefused events.
func refusals(g Gomega, ns, name string) []string {
	return notes(g, ns, name, paymentsv1alpha1.ReasonResolutionRefused)
}

// metricValue reads the metric name on the manager's shared registry: the
// sum of its counter and gauge series whose labels include labels, and how
// many series matched (histograms count, with a value of zero).
func metricValue(t *testing.T, name string, labels map[string]string) (value float64, series int) {
	t.Helper()
	families, err := metrics.Registry.Gather()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			if matches(have, labels) {
				value += m.GetCounter().GetValue() + m.GetGauge().GetValue()
				series++
			}
		}
	}
	return value, series
}

// matches reports whether have holds every label of want.
func matches(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// counterValue reads a counter of the manager's shared registry, summed
// over its labels. Tests that compare it before and after must not run in
// parallel with others: every manager of the package counts into it.
func counterValue(t *testing.T, name string) float64 {
	t.Helper()
	v, _ := metricValue(t, name, nil)
	return v
}

// jobsGauge reads the PaymentJob series of an engine gauge (labelled by
// kind) of the manager's shared registry.
func jobsGauge(t *testing.T, name string) float64 {
	t.Helper()
	v, series := metricValue(t, name, map[string]string{"kind": "PaymentJob"})
	NewWithT(t).Expect(series).To(Equal(1), "%s has no PaymentJob series", name)
	return v
}

// gaugeValue reads a gauge without labels of the manager's shared registry.
func gaugeValue(t *testing.T, name string) float64 {
	t.Helper()
	v, series := metricValue(t, name, nil)
	NewWithT(t).Expect(series).To(Equal(1), "%s is not registered, or has labels", name)
	return v
}
