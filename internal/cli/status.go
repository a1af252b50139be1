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

package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/ledger"
	"github.com/idempotency-dev/paymentjob-operator/pkg/providerlookup"
)

// maxEvents is how many of an object's events status shows, newest last.
const maxEvents = 10

// Story is what status prints: everything about one payment on one screen,
// and as -o json|yaml.
type Story struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Phase     string `json:"phase"`
	// Why is the condition that explains the phase: "Reason: message".
	Why       string `json:"why,omitempty"`
	Suspended bool   `json:"suspended,omitempty"`
	Amount    int64  `json:"amount"`
	Currency  string `json:"currency,omitempty"`
	// ProviderRef is the PaymentProvider the payment goes through.
	ProviderRef string `json:"providerRef"`
	// PaymentJob is, for a refund, the payment it gives money back from.
	PaymentJob     string                             `json:"paymentJob,omitempty"`
	IdempotencyKey string                             `json:"idempotencyKey,omitempty"`
	RequestHash    string                             `json:"requestHash,omitempty"`
	Attempts       int32                              `json:"attempts"`
	Claim          *paymentsv1alpha1.Claim            `json:"claim,omitempty"`
	Provider       *paymentsv1alpha1.ProviderIdentity `json:"provider,omitempty"`
	Response       *paymentsv1alpha1.ProviderResponse `json:"providerResponse,omitempty"`
	Failure        *paymentsv1alpha1.Failure          `json:"failure,omitempty"`
	Resolution     *paymentsv1alpha1.Resolution       `json:"resolution,omitempty"`
	// Settling is a payment the provider accepted and has not settled (a
	// bank debit), or settled after it waited.
	Settling   *SettlingLine      `json:"settling,omitempty"`
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	Refunds    []RefundLine       `json:"refunds,omitempty"`
	// Refunded is, for a Completed job or a refund, what was refunded of
	// the charge and what is left; RefundedError says why it could not
	// be told.
	Refunded      *RefundPicture `json:"refunded,omitempty"`
	RefundedError string         `json:"refundedError,omitempty"`
	Ledger        LedgerLine     `json:"ledger"`
	Events        []EventLine    `json:"events"`
	// EventsError is why the events could not be read (the rest is told).
	EventsError   string         `json:"eventsError,omitempty"`
	ProviderCheck *ProviderCheck `json:"providerCheck,omitempty"`
	// Next is what to do next: commands with the object's name and
	// namespace, or the runbook section of a reason that needs a person.
	Next []NextStep `json:"next,omitempty"`

	// chargeKey is, for a refund, the key of the charge it refunds.
	chargeKey string
}

// RefundLine is one PaymentRefund of a job.
type RefundLine struct {
	Name   string `json:"name"`
	Phase  string `json:"phase"`
	Amount int64  `json:"amount,omitempty"`
	ID     string `json:"id,omitempty"`
	// Why is, for a refund that failed or is stuck, its reason and a
	// short message.
	Why string `json:"why,omitempty"`
}

// LedgerLine says whether the outcome ledger holds the payment.
type LedgerLine struct {
	Backend string         `json:"backend"`
	Found   bool           `json:"found"`
	Entries []ledger.Entry `json:"entries,omitempty"`
	// Error is why the ledger could not be read.
	Error string `json:"error,omitempty"`
	// Note says, when the ledger holds no entry, why: what is recorded
	// of a payment that failed before anything was sent, or which ledger
	// was read for a finished one.
	Note string `json:"note,omitempty"`
}

// EventLine is one event of the object.
type EventLine struct {
	Type    string    `json:"type"`
	Reason  string    `json:"reason"`
	Count   int32     `json:"count"`
	Last    time.Time `json:"last"`
	Message string    `json:"message"`
}

// ProviderCheck is what the provider itself holds under the key: a job's
// own, or, for a refund, the key of the charge it refunds (whose refunds
// the provider lists with it).
type ProviderCheck struct {
	Key string `json:"key"`
	// Warnings say when the answer may not be the whole truth.
	Warnings []string                `json:"warnings,omitempty"`
	Charges  []providerlookup.Charge `json:"charges"`
	Error    string                  `json:"error,omitempty"`

	// lagging is true when one of the warnings is the search lag's: a
	// charge the provider does not show may still be missing, but one it
	// shows is there.
	lagging bool
}

type statusOptions struct {
	root   *Root
	output string
	bookFlags
}

// bookFlags say where status and refund read a payment's books beyond the
// cluster: the provider, read-only (--check-provider, over plain http only
// to --insecure-provider-hosts), and the outcome ledger (ledgerFlags).
type bookFlags struct {
	checkProvider bool
	insecureHosts []string
	ledger        ledgerFlags
}

// addBookFlags adds the flags of f; --check-provider defaults to check,
// and says usage.
func (f *bookFlags) addBookFlags(cmd *cobra.Command, check bool, usage string) {
	cmd.Flags().BoolVar(&f.checkProvider, "check-provider", check, usage)
	addInsecureHosts(cmd, &f.insecureHosts)
	f.ledger.addFlags(cmd)
}

func newStatusCommand(r *Root) *cobra.Command {
	o := &statusOptions{root: r}
	cmd := targetCommand(r, &cobra.Command{
		Use:   "status pj/NAME | prefund/NAME",
		Short: "Show what happened to a payment or a refund, what is left of its charge, and what to run next",
		Example: `  kubectl payments status pj/invoice-2026-0042 -n billing
  kubectl payments status prefund/invoice-2026-0042-return -n billing -o json
  kubectl payments status pj/invoice-2026-0042 -n billing --check-provider
  KUBECTL_PAYMENTS_INSECURE_PROVIDER_HOSTS=127.0.0.1 kubectl payments status pj/invoice-1 -n payments-demo --check-provider`,
	}, []kind{kindJob, kindRefund}, func(cmd *cobra.Command, t target) error {
		if err := checkOutput(o.output, outputTable, outputJSON, outputYAML); err != nil {
			return err
		}
		story, err := o.story(ctxOf(cmd), t)
		if err != nil {
			return err
		}
		if o.output != outputTable {
			return printData(r.Out(), o.output, story)
		}
		return printStory(r.Out(), story, time.Now())
	})
	cmd.Flags().StringVarP(&o.output, "output", "o", "table", "Output format: table, json or yaml")
	o.addBookFlags(cmd, false,
		"Also ask the provider (read-only) what it holds under the payment's idempotency key; needs get on the provider's Secret")
	return cmd
}

func (o *statusOptions) story(ctx context.Context, t target) (*Story, error) {
	c, ns, err := o.root.ClientIn()
	if err != nil {
		return nil, err
	}
	var obj client.Object
	var st *paymentsv1alpha1.PaymentStatus
	var s *Story
	switch t.Kind {
	case kindRefund:
		var rf paymentsv1alpha1.PaymentRefund
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: t.Name}, &rf); err != nil {
			return nil, classify(err, fmt.Sprintf("%s in namespace %s", t, ns))
		}
		obj, s, st = &rf, refundStory(&rf), &rf.Status.PaymentStatus
		s.Refunded, s.RefundedError = o.refundPicture(ctx, c, ns, rf.Spec.PaymentJobRef.Name, rf.Spec.ProviderRef.Name,
			rf.Spec.PaymentJobRef.IdempotencyKey)
	default:
		var pj paymentsv1alpha1.PaymentJob
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: t.Name}, &pj); err != nil {
			return nil, classify(err, fmt.Sprintf("%s in namespace %s", t, ns))
		}
		obj, s, st = &pj, jobStory(&pj), &pj.Status.PaymentStatus
		if s.Refunds, err = refundsOf(ctx, c, &pj); err != nil {
			return nil, err
		}
		if pj.Status.Phase == paymentsv1alpha1.PhaseCompleted {
			s.Refunded, s.RefundedError = o.refundPicture(ctx, c, ns, pj.Name, pj.Spec.ProviderRef.Name, "")
		}
	}
	if s.Events, err = eventsOf(ctx, c, obj); err != nil {
		if !apierrors.IsForbidden(err) {
			return nil, classify(err, "the events of namespace "+ns)
		}
		// Events are the view role's; a user with the payment roles
		// only still reads the rest of the story.
		s.EventsError = fmt.Sprintf("forbidden (%s); the view role (or get and list on events) shows them", statusMessage(err))
	}
	s.Ledger = o.ledgerLine(ctx, c, s.IdempotencyKey)
	if !s.Ledger.Found && s.Ledger.Error == "" {
		s.Ledger.Note = o.ledgerNote(s.Kind, st)
	}
	if o.checkProvider {
		s.ProviderCheck = o.providerCheck(ctx, c, ns, s, st)
	}
	s.Next = nextSteps(s, st)
	return s, nil
}

// ledgerNote says why the ledger holds no entry of a payment: nothing is
// recorded of one that failed unsent, the entry of a finished one is in
// another ledger (or older than its retention), and an unfinished one's
// is written when it finishes.
func (o *statusOptions) ledgerNote(kind string, st *paymentsv1alpha1.PaymentStatus) string {
	if note := unsentFailure(kind, st); note != "" {
		return note
	}
	if st.IdempotencyKey == "" {
		return ""
	}
	if !finished(st) {
		return "written when the payment finishes"
	}
	return fmt.Sprintf("the payment is %s and the %s ledger was read: its entry may be older than the ledger's retention, or %s",
		st.Phase, o.ledger.backend, otherLedger(o.ledger.backend))
}

// otherLedger says how to read the other ledger than backend, where the
// operator may record.
func otherLedger(backend string) string {
	if backend == backendPostgres {
		return "the operator records to the crd ledger (--ledger=crd)"
	}
	return "the operator records to PostgreSQL (manager --ledger-backend=postgres): then pass --ledger=postgres " +
		"--ledger-postgres-dsn-file=FILE, or set KUBECTL_PAYMENTS_LEDGER=postgres and KUBECTL_PAYMENTS_LEDGER_DSN_FILE=FILE"
}

func jobStory(pj *paymentsv1alpha1.PaymentJob) *Story {
	s := paymentStory(string(kindJob), pj.Namespace, pj.Name, &pj.Status.PaymentStatus)
	s.Suspended = pj.Spec.Suspend != nil && *pj.Spec.Suspend
	s.Amount, s.Currency = pj.Spec.Amount, pj.Spec.Currency
	s.ProviderRef = pj.Spec.ProviderRef.Name
	return s
}

func refundStory(rf *paymentsv1alpha1.PaymentRefund) *Story {
	s := paymentStory(string(kindRefund), rf.Namespace, rf.Name, &rf.Status.PaymentStatus)
	s.Suspended = rf.Spec.Suspend != nil && *rf.Spec.Suspend
	if rf.Spec.Amount != nil {
		s.Amount = *rf.Spec.Amount
	}
	if ch := rf.Status.Charge; ch != nil {
		s.Currency = ch.Currency
		if rf.Spec.Amount == nil {
			s.Amount = ch.Amount
		}
	}
	s.ProviderRef = rf.Spec.ProviderRef.Name
	s.PaymentJob = rf.Spec.PaymentJobRef.Name
	if ch := rf.Status.Charge; ch != nil {
		s.chargeKey = ch.IdempotencyKey
	}
	return s
}

func paymentStory(k, ns, name string, st *paymentsv1alpha1.PaymentStatus) *Story {
	phase := string(st.Phase)
	if phase == "" {
		phase = "Pending"
	}
	return &Story{
		Kind: k, Namespace: ns, Name: name, Phase: phase, Why: why(st),
		IdempotencyKey: st.IdempotencyKey, RequestHash: st.RequestHash, Attempts: st.Attempts,
		Claim: st.Claim, Provider: st.Provider, Response: st.ProviderResponse, Failure: st.Failure,
		Resolution: st.Resolution, Conditions: st.Conditions, Settling: settlingOf(st, time.Now()),
	}
}

// why is the condition that explains where the payment is: Stalled when it
// is stalled, the progress while it is reconciled, Ready otherwise.
func why(st *paymentsv1alpha1.PaymentStatus) string {
	for _, t := range []string{paymentsv1alpha1.ConditionStalled, paymentsv1alpha1.ConditionReconciling, paymentsv1alpha1.ConditionReady} {
		c := meta.FindStatusCondition(st.Conditions, t)
		if c == nil || (t != paymentsv1alpha1.ConditionReady && c.Status != metav1.ConditionTrue) {
			continue
		}
		if c.Message == "" {
			return c.Reason
		}
		return c.Reason + ": " + c.Message
	}
	if st.Phase == "" {
		return "not seen by the operator yet: is it running, and does it watch this namespace?"
	}
	return ""
}

func refundsOf(ctx context.Context, c client.Client, pj *paymentsv1alpha1.PaymentJob) ([]RefundLine, error) {
	var list paymentsv1alpha1.PaymentRefundList
	if err := c.List(ctx, &list, client.InNamespace(pj.Namespace)); err != nil {
		return nil, classify(err, "the PaymentRefunds of namespace "+pj.Namespace)
	}
	var lines []RefundLine
	for _, rf := range list.Items {
		if rf.Spec.PaymentJobRef.Name != pj.Name {
			continue
		}
		l := RefundLine{Name: rf.Name, Phase: string(rf.Status.Phase), Why: whyFailed(&rf.Status.PaymentStatus)}
		if r := rf.Status.ProviderResponse; r != nil {
			l.ID, l.Amount = r.ID, r.Amount
		} else if rf.Spec.Amount != nil {
			l.Amount = *rf.Spec.Amount
		}
		lines = append(lines, l)
	}
	slices.SortFunc(lines, func(a, b RefundLine) int { return strings.Compare(a.Name, b.Name) })
	return lines, nil
}

// eventsOf returns the last maxEvents events of obj, oldest first, as
// kubectl describe finds them (by the object's UID).
func eventsOf(ctx context.Context, c client.Client, obj client.Object) ([]EventLine, error) {
	var list corev1.EventList
	sel := fields.OneTermEqualSelector("involvedObject.uid", string(obj.GetUID()))
	if err := c.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingFieldsSelector{Selector: sel}); err != nil {
		return nil, err
	}
	lines := make([]EventLine, 0, len(list.Items))
	for _, ev := range list.Items {
		lines = append(lines, EventLine{Type: ev.Type, Reason: ev.Reason, Count: max(ev.Count, 1), Last: lastSeen(ev), Message: ev.Message})
	}
	slices.SortStableFunc(lines, func(a, b EventLine) int { return a.Last.Compare(b.Last) })
	if len(lines) > maxEvents {
		lines = lines[len(lines)-maxEvents:]
	}
	return lines, nil
}

func lastSeen(ev corev1.Event) time.Time {
	switch {
	case ev.Series != nil && !ev.Series.LastObservedTime.IsZero():
		return ev.Series.LastObservedTime.Time
	case !ev.LastTimestamp.IsZero():
		return ev.LastTimestamp.Time
	case !ev.EventTime.IsZero():
		return ev.EventTime.Time
	}
	return ev.CreationTimestamp.Time
}

func (o *statusOptions) ledgerLine(ctx context.Context, c client.Client, key string) LedgerLine {
	line := LedgerLine{Backend: o.ledger.backend}
	if key == "" {
		return line
	}
	reader, closeFn, err := o.ledger.open(ctx, c)
	if err != nil {
		line.Error = err.Error()
		return line
	}
	defer closeFn()
	entries, err := reader.Find(ctx, key)
	if err != nil {
		line.Error = err.Error()
		return line
	}
	line.Found, line.Entries = len(entries) > 0, entries
	return line
}
