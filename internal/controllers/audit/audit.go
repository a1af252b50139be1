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

package audit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/prometheus/client_golang/prometheus"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
)

// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies;validatingadmissionpolicybindings;mutatingadmissionpolicies;mutatingadmissionpolicybindings,verbs=get;list

const (
	// AdmissionPolicyLabel is set on every policy and binding of
	// config/policy. Its value is the policy's base name, the name before
	// any prefix the installer gave it (config/default adds
	// "paymentjob-operator-"), so the audit finds the policies by it.
	AdmissionPolicyLabel = "payments.idempotency.dev/admission-policy"

	// ReasonFinishedLabelWithoutOutcome says the job carries the finished label
	// but is neither Completed nor Failed. The label keeps it out of the
	// operator's cache: it is never charged until the label is removed.
	ReasonFinishedLabelWithoutOutcome = paymentsv1alpha1.ReasonFinishedLabelWithoutOutcome
)

// checkDone ends one check of an audit: after an error (unless the manager
// is shutting down, which is no finding) it counts the error and logs
// failed, and the check's gauge keeps its last value; otherwise it sets the
// gauge to found and reports true.
func checkDone(ctx context.Context, err error, check string, gauge prometheus.Gauge, found int, failed string) bool {
	switch {
	case err != nil && ctx.Err() != nil:
		return false
	case err != nil:
		auditErrorsTotal.WithLabelValues(check).Inc()
		log.FromContext(ctx).Error(err, failed)
		return false
	}
	gauge.Set(float64(found))
	return true
}

// The checks of an audit, the label of paymentjob_audit_errors_total.
const (
	auditCheckAdmissionPolicies = "admission_policies"
	auditCheckFinishedLabel     = "finished_label"
)

// auditPage is how many objects one list request of the audit returns.
const auditPage = 500

// DefaultInterval is the time between audits of the admission policies and
// of the finished labels (the manager's --audit-interval), and when
// Auditor.Interval is zero.
const DefaultInterval = 5 * time.Minute

// Auditor looks, at start and then every Interval, for what would leave
// PaymentJobs and PaymentRefunds unseen without anyone knowing:
//
//   - the admission policies of config/policy missing or not enforced. Above
//     all finished-label: without it, a PaymentJob or PaymentRefund created
//     with the finished label (from a `kubectl get -o yaml` export, a
//     restored backup) is left out of the operator's cache, and never
//     charged or refunded.
//   - PaymentJobs and PaymentRefunds that carry the finished label without
//     being finished: each gets a Warning event
//     (ReasonFinishedLabelWithoutOutcome) once per process, saying how to
//     remove the label.
//
// It reports through the gauges paymentjob_admission_policies_missing and
// paymentjob_finished_label_without_outcome, and logs. A check that cannot
// be completed leaves its gauge at its last value and increments
// paymentjob_audit_errors_total. It only reads from the API server, through
// Reader, since neither policies nor finished objects are in the cache.
type Auditor struct {
	// Reader lists policies and finished objects from the API server; the
	// manager's API reader (mgr.GetAPIReader()), not its cache.
	Reader client.Reader
	// Recorder emits the Warning events on objects with the finished label
	// and no outcome.
	Recorder events.EventRecorder
	// Interval is the time between audits; DefaultInterval when zero.
	Interval time.Duration
	// Namespaces, if any, restrict the audit of PaymentJobs and
	// PaymentRefunds to them, as pkg/operator's CacheOptions restricts the manager;
	// empty audits every namespace.
	// Admission policies are cluster-scoped and always audited.
	Namespaces []string
	// Clock paces the audits; the real clock when nil.
	Clock clock.WithTicker

	// running serialises audits.
	running sync.Mutex
	// noSelectableFields is set once the API server refused a field
	// selector on status.phase.
	noSelectableFields atomic.Bool
	// reported holds the jobs announced by an event, so each is announced
	// once per process; jobs no longer found are forgotten.
	reported map[types.UID]struct{}
	// logged is the set of policy problems last logged; nil before the
	// first successful check.
	logged []string

	mu   sync.Mutex
	last Report
}

var (
	_ manager.Runnable               = &Auditor{}
	_ manager.LeaderElectionRunnable = &Auditor{}
)

// Report is what one audit found.
type Report struct {
	// At is when the audit started; zero before the first audit.
	At time.Time
	// PolicyProblems lists, by base name, what is wrong with each expected
	// admission policy that is missing or not enforced; empty when all are
	// in place. Nil when PolicyError is set.
	PolicyProblems map[string][]string
	// PolicyError is why the admission policies could not be audited.
	PolicyError error
	// FinishedWithoutOutcome lists the PaymentJobs and PaymentRefunds found
	// with the finished label but neither Completed nor Failed, sorted by
	// kind, namespace and name. Partial when JobError is set.
	FinishedWithoutOutcome []Unfinished
	// JobError is why the PaymentJobs and PaymentRefunds could not all be
	// audited.
	JobError error
}

// Unfinished names an object found with the finished label and no outcome.
type Unfinished struct {
	// Kind is PaymentJob or PaymentRefund.
	Kind string
	types.NamespacedName
}

// PoliciesMissing is the number of expected admission policies that are
// missing or not enforced, the value of paymentjob_admission_policies_missing.
func (r Report) PoliciesMissing() int { return len(r.PolicyProblems) }

// SetupWithManager adds the audit to the manager. It refuses a missing
// reader or recorder.
func (a *Auditor) SetupWithManager(mgr manager.Manager) error {
	if err := a.validate(); err != nil {
		return err
	}
	if err := mgr.Add(a); err != nil {
		return fmt.Errorf("cannot add the audit to the manager: %w", err)
	}
	return nil
}

func (a *Auditor) validate() error {
	switch {
	case a.Reader == nil, a.Recorder == nil:
		return errors.New("audit needs a reader and an event recorder")
	case a.Interval < 0:
		return fmt.Errorf("invalid audit interval %s", a.Interval)
	}
	return nil
}

// NeedLeaderElection is false: the audit only reads, so every replica runs
// it and exports the same gauges (alerts take their max). A job without an
// outcome gets one event from each replica.
func (a *Auditor) NeedLeaderElection() bool { return false }

// Start audits, then audits again every Interval until ctx ends.
func (a *Auditor) Start(ctx context.Context) error {
	if err := a.validate(); err != nil {
		return err
	}
	interval := a.Interval
	if interval == 0 {
		interval = DefaultInterval
	}
	ticker := a.clock().NewTicker(interval)
	defer ticker.Stop()
	for {
		a.Audit(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

func (a *Auditor) clock() clock.WithTicker {
	if a.Clock == nil {
		return clock.RealClock{}
	}
	return a.Clock
}

// LastReport returns what the latest audit found.
func (a *Auditor) LastReport() Report {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last
}

// Audit runs both checks once: it sets the gauges, logs the policy problems
// when they changed since the last audit, announces the jobs with the
// finished label and no outcome that were not announced yet, and returns
// what it found.
func (a *Auditor) Audit(ctx context.Context) Report {
	a.running.Lock()
	defer a.running.Unlock()
	logger := log.FromContext(ctx).WithName("audit")
	ctx = log.IntoContext(ctx, logger)
	report := Report{At: a.clock().Now()}

	report.PolicyProblems, report.PolicyError = a.auditPolicies(ctx)
	if checkDone(ctx, report.PolicyError, auditCheckAdmissionPolicies, admissionPoliciesMissing, len(report.PolicyProblems),
		"Cannot audit the admission policies; paymentjob_admission_policies_missing keeps its last value") {
		a.logPolicies(ctx, report.PolicyProblems)
	}
	report.FinishedWithoutOutcome, report.JobError = a.auditFinishedLabels(ctx)
	checkDone(ctx, report.JobError, auditCheckFinishedLabel, finishedLabelWithoutOutcome, len(report.FinishedWithoutOutcome),
		"Cannot audit the payment jobs with the finished label; paymentjob_finished_label_without_outcome keeps its last value")

	a.mu.Lock()
	a.last = report
	a.mu.Unlock()
	return report
}

// logPolicies logs every policy problem, or that there is none, the first
// time and whenever the set of problems changed.
func (a *Auditor) logPolicies(ctx context.Context, problems map[string][]string) {
	var current []string
	for name, ps := range problems {
		for _, p := range ps {
			current = append(current, name+": "+p)
		}
	}
	slices.Sort(current)
	if a.logged != nil && slices.Equal(current, a.logged) {
		return
	}
	a.logged = append([]string{}, current...)
	logger := log.FromContext(ctx)
	if len(problems) == 0 {
		names := make([]string, 0, len(expectedPolicies))
		for _, p := range expectedPolicies {
			names = append(names, p.name)
		}
		logger.Info("Admission policies present and enforced", "policies", names)
		return
	}
	for _, want := range expectedPolicies {
		for _, p := range problems[want.name] {
			logger.Error(nil, "Admission policy missing or not enforced",
				"policy", want.name, "problem", p, "consequence", want.consequence)
		}
	}
}

// labelledKind is a kind that the finished label takes out of the
// operator's cache, as the audit names it.
type labelledKind struct {
	// kind is the Kind, short its kubectl short name, noun its name in logs.
	kind, short, noun string
	// never says what does not happen to an object of the kind out of sight.
	never string
	// newList returns an empty list of the kind.
	newList func() client.ObjectList
}

// labelledKinds are the kinds the finished-label check audits.
var labelledKinds = []labelledKind{
	{kind: "PaymentJob", short: "pj", noun: "job", never: "charged", newList: func() client.ObjectList { return &paymentsv1alpha1.PaymentJobList{} }},
	{kind: "PaymentRefund", short: "prefund", noun: "refund", never: "refunded", newList: func() client.ObjectList { return &paymentsv1alpha1.PaymentRefundList{} }},
}

// auditFinishedLabels lists the PaymentJobs and PaymentRefunds with the
// finished label, a page at a time, and returns those that are neither
// Completed nor Failed. It announces each once per process, and forgets the
// ones no longer found.
func (a *Auditor) auditFinishedLabels(ctx context.Context) ([]Unfinished, error) {
	namespaces := a.Namespaces
	if len(namespaces) == 0 {
		namespaces = []string{""}
	}
	found := map[types.UID]struct{}{}
	var (
		unfinished []Unfinished
		errs       []error
	)
	// The API server leaves the finished ones out (status.phase is a
	// selectable field of both CRDs), so a long history is not sent here
	// every audit; one that cannot (before Kubernetes 1.31) sends every
	// labelled object, filtered here.
	unfinishedPhase := client.MatchingFieldsSelector{Selector: fields.AndSelectors(
		fields.OneTermNotEqualSelector("status.phase", string(paymentsv1alpha1.PhaseCompleted)),
		fields.OneTermNotEqualSelector("status.phase", string(paymentsv1alpha1.PhaseFailed)))}
	for _, k := range labelledKinds {
		collect := func(obj engine.Object) {
			_, seen := found[obj.GetUID()]
			if p := obj.GetPaymentStatus().Phase; seen || p == paymentsv1alpha1.PhaseCompleted || p == paymentsv1alpha1.PhaseFailed {
				return
			}
			found[obj.GetUID()] = struct{}{}
			unfinished = append(unfinished, Unfinished{Kind: k.kind, NamespacedName: client.ObjectKeyFromObject(obj)})
			a.announce(ctx, k, obj)
		}
		for _, ns := range namespaces {
			labelled := []client.ListOption{client.InNamespace(ns), client.HasLabels{paymentsv1alpha1.LabelFinished}}
			err := errors.New("no field selector")
			if !a.noSelectableFields.Load() {
				err = listObjects(ctx, a.Reader, k.newList, collect, append(labelled, unfinishedPhase)...)
			}
			if err != nil {
				// Refused or failed with the field selector: without it, and
				// never again with it once that works.
				if err = listObjects(ctx, a.Reader, k.newList, collect, labelled...); err == nil {
					a.noSelectableFields.Store(true)
				}
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("cannot list %ss with the finished label: %w", k.kind, err))
			}
		}
	}
	slices.SortFunc(unfinished, func(x, y Unfinished) int {
		return cmp.Or(strings.Compare(x.Kind, y.Kind), strings.Compare(x.Namespace, y.Namespace), strings.Compare(x.Name, y.Name))
	})
	if err := errors.Join(errs...); err != nil {
		// Some objects were not seen: forget none.
		return unfinished, err
	}
	for uid := range a.reported {
		if _, ok := found[uid]; !ok {
			delete(a.reported, uid)
		}
	}
	return unfinished, nil
}

// announce emits the Warning event and the log line of an object of kind k
// with the finished label and no outcome, unless this process already did.
func (a *Auditor) announce(ctx context.Context, k labelledKind, obj engine.Object) {
	if _, ok := a.reported[obj.GetUID()]; ok {
		return
	}
	if a.reported == nil {
		a.reported = map[types.UID]struct{}{}
	}
	a.reported[obj.GetUID()] = struct{}{}
	phase := engine.PhaseLabel(obj.GetPaymentStatus().Phase)
	remedy := fmt.Sprintf("kubectl label %s %s -n %s %s-", k.short, obj.GetName(), obj.GetNamespace(), paymentsv1alpha1.LabelFinished)
	log.FromContext(ctx).Error(nil, fmt.Sprintf("Payment %s has the finished label but no outcome; it is never %s", k.noun, k.never),
		k.noun, klog.KObj(obj), "phase", phase, "remedy", remedy)
	a.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, ReasonFinishedLabelWithoutOutcome, "Audit",
		"The label %s takes this %s out of the operator's sight: it is %s, not Completed or Failed, and will not be %s. "+
			"If it is to be %s, remove the label: %s",
		paymentsv1alpha1.LabelFinished, k.noun, phase, k.never, k.never, remedy)
}

// listPages lists every object of a kind, auditPage at a time, and hands
// each page to page. Every page is a new list, so no field of one object
// carries over to the next.
func listPages[T any, PT interface {
	*T
	client.ObjectList
}](ctx context.Context, r client.Reader, page func(PT), opts ...client.ListOption) error {
	return listPagesOf(ctx, r, func() client.ObjectList { return PT(new(T)) }, func(list client.ObjectList) error {
		page(list.(PT))
		return nil
	}, opts...)
}

// listObjects is listPages for the lists made by newList, handing each
// payment object to each.
func listObjects(ctx context.Context, r client.Reader, newList func() client.ObjectList, each func(engine.Object), opts ...client.ListOption) error {
	return listPagesOf(ctx, r, newList, func(list client.ObjectList) error {
		return meta.EachListItem(list, func(o runtime.Object) error {
			obj, ok := o.(engine.Object)
			if !ok {
				return fmt.Errorf("listed a %T, not a payment kind", o)
			}
			each(obj)
			return nil
		})
	}, opts...)
}

// listPagesOf lists every object of a kind, auditPage at a time, in lists
// made by newList, and hands each page to page.
func listPagesOf(ctx context.Context, r client.Reader, newList func() client.ObjectList, page func(client.ObjectList) error, opts ...client.ListOption) error {
	cont := ""
	for {
		list := newList()
		if err := r.List(ctx, list, append(slices.Clone(opts), client.Limit(auditPage), client.Continue(cont))...); err != nil {
			return err
		}
		if err := page(list); err != nil {
			return err
		}
		if cont = list.GetContinue(); cont == "" {
			return nil
		}
	}
}
