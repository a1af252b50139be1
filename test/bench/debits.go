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
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/childproc"
	psandbox "github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// The bank-debit phase: -debits SEPA debits that the sandbox settles
// debitSettle after it accepted them, first with no provider events (the
// operator finds each settlement by reading), then with the sandbox's
// signed webhooks sent to the manager's events endpoint through a tap that
// notes when each event arrives. It reports the provider requests a debit
// costs beyond its create, with events and without, and the time from an
// event's arrival to the job's Completed status; and the reads an hour of
// 100,000 debits settling, from the operator's read schedule.

// debitSettle is how long the sandbox keeps a debit processing.
const debitSettle = 5 * time.Second

// Targets of the phase.
const (
	// maxSettleRequestsWithEvents: a debit woken by its event costs one
	// read, and a poll now and then.
	maxSettleRequestsWithEvents = 1.2
	// maxEventToStatus is the p99 from an event's arrival to the status.
	maxEventToStatus = 2 * time.Second
	// stripeLiveReadsPerHour is Stripe's live-mode limit of 100 requests a
	// second; the settling reads must leave half of it to the charges.
	stripeLiveReadsPerHour = 100 * 3600
)

// Namespaces of the phase.
const (
	nsDebits       = "bench-debits"
	nsDebitsEvents = "bench-debits-events"
	debitsSecret   = "whsec_bench"
)

// debitsPhase runs phase 10.
func (b *bench) debitsPhase(ctx context.Context) error {
	n := b.cfg.debits
	step("phase 10/%d: %d bank debits settling %s after they are accepted, without events, then with", phaseCount, n, debitSettle)
	b.rep.add(figure{key: "settling_reads_per_hour_100k",
		label: "100,000 debits settling over 8 days: provider reads/hour (the read schedule, no events)",
		value: settlingReadsPerHour(100_000, 8*24*time.Hour), kind: kindCount,
		target: atMost(stripeLiveReadsPerHour/2, "%.0f (half of Stripe's live limit)")})
	if err := b.sb.SetDebitSettleDelay(ctx, debitSettle); err != nil {
		return err
	}
	if err := b.sb.SetLatency(ctx, 0); err != nil {
		return err
	}

	b.stopManager()
	if _, err := b.startManager(ctx, userManager, b.cfg.workers); err != nil {
		return err
	}
	perDebit, _, err := b.debitRun(ctx, nsDebits, n, nil)
	if err != nil {
		return err
	}
	b.rep.add(perJob("settle_requests_per_payment_no_events", "debits, no events: provider requests/debit beyond its create",
		perDebit, int64(n), nil))
	b.stopManager()

	addr, err := childproc.FreeLoopbackAddr()
	if err != nil {
		return err
	}
	tap, err := newEventTap(addr)
	if err != nil {
		return err
	}
	defer tap.close()
	if _, err := b.startManager(ctx, userManager, b.cfg.workers, "--events-bind-address="+addr); err != nil {
		return err
	}
	defer b.stopManager()
	perDebit, latencies, err := b.debitRun(ctx, nsDebitsEvents, n, tap)
	if err != nil {
		return err
	}
	b.rep.add(perJob("settle_requests_per_payment", "debits, signed events: provider requests/debit beyond its create",
		perDebit, int64(n), &target{text: fmt.Sprintf("<= %.1f", maxSettleRequestsWithEvents),
			met: func(f figure) bool { return f.value <= maxSettleRequestsWithEvents }}))
	slices.Sort(latencies)
	p99 := percentile(latencies, 99)
	b.rep.add(figure{key: "event_to_status_p99_ms", label: "debits, signed events: event arrival to Completed, p99",
		value: float64(p99.Milliseconds()), kind: kindMillis, target: atMost(float64(maxEventToStatus.Milliseconds()), "%.0f ms")})
	return b.sb.SetWebhooks(ctx, "", "", "", psandbox.WebhookFaults{}, 0)
}

// debitRun creates n debit jobs in ns, a new namespace, waits until each
// is Completed, and returns the provider requests beyond the n creates;
// with tap, the provider sends events through it, and the latencies from
// each job's settlement event to its Completed status.
func (b *bench) debitRun(ctx context.Context, ns string, n int, tap *eventTap) (int64, []time.Duration, error) {
	setup := &providerSetup{apiBase: b.sb.URL, secretValue: b.secretValue, lookup: paymentsv1alpha1.LookupNever}
	if tap != nil {
		setup.eventsSecret = "sandbox-events"
	}
	if err := b.cl.setupNamespace(ctx, ns, setup); err != nil {
		return 0, nil, err
	}
	if tap != nil {
		if err := b.cl.creator.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: setup.eventsSecret, Namespace: ns,
				Labels: map[string]string{paymentsv1alpha1.LabelCredentials: "true"}},
			StringData: map[string]string{"endpointSecret": debitsSecret},
		}); err != nil {
			return 0, nil, fmt.Errorf("cannot create the events secret: %w", err)
		}
		if err := b.sb.SetWebhooks(ctx, tap.url(ns), debitsSecret, psandbox.WebhookFormatStripe, psandbox.WebhookFaults{}, 1); err != nil {
			return 0, nil, err
		}
	}
	mark, err := b.markProviders(ctx)
	if err != nil {
		return 0, nil, err
	}
	for i := range n {
		job := newJob(ns, i)
		job.Spec.PaymentMethod, job.Spec.Currency = psandbox.PaymentMethodSEPADebit, "eur"
		if err := b.cl.creator.Create(ctx, job); err != nil {
			return 0, nil, fmt.Errorf("cannot create debit %d: %w", i, err)
		}
	}
	completedAt, err := b.waitCompleted(ctx, ns, n)
	if err != nil {
		return 0, nil, err
	}
	calls, err := b.providerCallsSince(ctx, mark)
	if err != nil {
		return 0, nil, err
	}
	var latencies []time.Duration
	if tap != nil {
		for id, done := range completedAt {
			if at, ok := tap.arrived(id); ok {
				latencies = append(latencies, max(done.Sub(at), 0))
			}
		}
		if len(latencies) == 0 {
			return 0, nil, fmt.Errorf("no settlement event of the %d debits reached the manager", n)
		}
	}
	return calls - int64(n), latencies, nil
}

// waitCompleted polls the jobs of ns every 50 ms until n are Completed,
// and returns when each was first seen Completed, by its payment's id.
func (b *bench) waitCompleted(ctx context.Context, ns string, n int) (map[string]time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.timeout)
	defer cancel()
	seen := map[string]time.Time{}
	for len(seen) < n {
		var list paymentsv1alpha1.PaymentJobList
		if err := b.cl.creator.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return nil, fmt.Errorf("cannot list the debits: %w", err)
		}
		now := time.Now()
		for _, j := range list.Items {
			st := j.Status
			if st.Phase == paymentsv1alpha1.PhaseFailed || (st.Phase == paymentsv1alpha1.PhaseProcessing && st.Settlement == nil && st.Attempts > 1) {
				return nil, fmt.Errorf("debit %s/%s: %s, %+v", ns, j.Name, st.Phase, st.Conditions)
			}
			if st.Phase == paymentsv1alpha1.PhaseCompleted && st.ProviderResponse != nil {
				if _, ok := seen[st.ProviderResponse.ID]; !ok {
					seen[st.ProviderResponse.ID] = now
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%d of %d debits Completed in %s: %w", len(seen), n, b.cfg.timeout, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return seen, nil
}

// settlingReadsPerHour is the provider reads an hour of n payments
// settling, accepted evenly over span (the oldest span old), each read at
// payment.SettleReadInterval of its age, without events.
func settlingReadsPerHour(n int, span time.Duration) float64 {
	total := 0.0
	for i := range n {
		age := time.Duration(float64(span) * (float64(i) + 0.5) / float64(n))
		total += float64(time.Hour) / float64(payment.SettleReadInterval(age, false))
	}
	return total
}

// eventTap is a loopback proxy between the sandbox's webhooks and the
// manager's events endpoint: it forwards every request as it came, and
// notes when the settlement event (payment_intent.succeeded) of each
// payment arrived.
type eventTap struct {
	target string
	srv    *http.Server
	ln     net.Listener

	mu  sync.Mutex
	got map[string]time.Time
}

// newEventTap listens on a free loopback port and forwards to the events
// endpoint at addr.
func newEventTap(addr string) (*eventTap, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t := &eventTap{target: "http://" + addr, ln: ln, got: map[string]time.Time{}}
	t.srv = &http.Server{Handler: t, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = t.srv.Serve(ln) }()
	return t, nil
}

// url is the tap's URL for the provider of ns.
func (t *eventTap) url(ns string) string {
	return "http://" + t.ln.Addr().String() + "/events/" + ns + "/" + providerName
}

// ServeHTTP notes the event and forwards it.
func (t *eventTap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var ev struct {
		Type string `json:"type"`
		Data struct {
			Object struct {
				ID string `json:"id"`
			} `json:"object"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &ev) == nil && ev.Type == "payment_intent.succeeded" {
		t.mu.Lock()
		if _, ok := t.got[ev.Data.Object.ID]; !ok {
			t.got[ev.Data.Object.ID] = arrived
		}
		t.mu.Unlock()
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, t.target+r.URL.Path, bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, "the events endpoint did not answer", http.StatusBadGateway)
		return
	}
	defer func() { _ = res.Body.Close() }()
	w.Header().Set("Content-Length", strconv.Itoa(0))
	w.WriteHeader(res.StatusCode)
}

// arrived returns when the settlement event of the payment id arrived.
func (t *eventTap) arrived(id string) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	at, ok := t.got[id]
	return at, ok
}

// close stops the tap.
func (t *eventTap) close() { _ = t.srv.Close() }
