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
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/childproc"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// Bank debits: 200 SEPA debits, 10 % of them failing for insufficient
// funds, settle at the sandbox about a minute after they were accepted,
// while the manager is SIGKILLed and started again. With events, the
// sandbox sends its signed webhooks to the managers' events endpoint with
// 20 % dropped, 20 % duplicated and 20 % reordered. Each debit is sent
// once, each job ends Completed or Failed with the bank's reason, and no
// job is ever Stalled (no alert).

const (
	debitsPerScenario = 200
	debitSettleAfter  = 45 * time.Second
	debitsSecret      = "whsec_e2e_debits"
)

func TestBankDebits(t *testing.T) {
	for _, withEvents := range []bool{false, true} {
		name := "debits"
		if withEvents {
			name = "debits-events"
		}
		t.Run(name, func(t *testing.T) { testBankDebits(t, name, withEvents) })
	}
}

func testBankDebits(t *testing.T, name string, withEvents bool) {
	g := NewWithT(t)
	s := newScenario(t, name, "--debit-settle-after="+debitSettleAfter.String())
	ns := s.namespaces[0]
	var eventsAddr string
	managerArgs := []string{}
	if withEvents {
		var err error
		eventsAddr, err = childproc.FreeLoopbackAddr()
		g.Expect(err).NotTo(HaveOccurred())
		managerArgs = append(managerArgs, "--events-bind-address="+eventsAddr)
		s.enableEvents(g, ns)
		url := fmt.Sprintf("http://%s/events/%s/%s", eventsAddr, ns, providerName)
		g.Expect(s.sandbox.SetWebhooks(context.Background(), url, debitsSecret, sandbox.WebhookFormatStripe,
			sandbox.WebhookFaults{Drop: 0.2, Duplicate: 0.2, Reorder: 0.2}, 40)).To(Succeed())
	}
	jobs := s.planJobs(debitsPerScenario, func(i int, j *plannedJob) {
		j.namespace = ns
		j.declined = false
		j.method = sandbox.PaymentMethodSEPADebit
		if i%10 == 7 {
			j.method = sandbox.PaymentMethodSEPADebitInsufficientFunds
		}
	})
	stalled := s.watchStalled()
	m := s.startManager(managerOptions{args: managerArgs})
	created := s.createJobsAsync(jobs, 10)

	// Kill the manager a few times while the debits settle: at the
	// creations, while they wait, and as they settle.
	for kill := range 4 {
		<-time.After(8*time.Second + rand.N(6*time.Second))
		m.Kill()
		t.Logf("%s: kill %d at %.0fs", name, kill+1, time.Since(s.started).Seconds())
		m = s.startManager(managerOptions{args: managerArgs})
	}
	created()
	live := s.waitAllTerminal()

	stats, err := s.sandbox.Stats(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	var problems []string
	completed, failed := 0, 0
	for _, p := range jobs {
		j, ok := live[p.key()]
		if !ok {
			problems = append(problems, p.key()+" is missing")
			continue
		}
		if n := stats.ChargesByKey[p.key()]; n != 1 {
			problems = append(problems, fmt.Sprintf("%s was sent %d times, want once", p.key(), n))
		}
		if j.Status.Settlement == nil || j.Status.Settlement.Method != "sepa_debit" {
			problems = append(problems, fmt.Sprintf("%s never waited for its settlement: %+v", p.key(), j.Status.Settlement))
		}
		switch {
		case p.method == sandbox.PaymentMethodSEPADebit && j.Status.Phase == paymentsv1alpha1.PhaseCompleted:
			completed++
		case p.method != sandbox.PaymentMethodSEPADebit && j.Status.Phase == paymentsv1alpha1.PhaseFailed &&
			j.Status.Failure != nil && j.Status.Failure.Reason == "insufficient_funds":
			failed++
		default:
			problems = append(problems, fmt.Sprintf("%s (%s) ended %s", p.key(), p.method, describe(&j)))
		}
	}
	sort.Strings(problems)
	g.Expect(problems).To(BeEmpty())
	g.Expect(stalled()).To(BeEmpty(), "no job was Stalled while its debit settled")
	g.Expect(completed + failed).To(Equal(debitsPerScenario))

	ms, err := m.scrape()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ms.sum("paymentjob_stalled_total", nil)).To(BeZero(), "nothing for an alert: no stall")
	reads := ms.sum("paymentjob_settle_reads_total", nil)
	wakes := ms.sum("paymentjob_event_wakes_total", nil)
	t.Logf("%s: %d Completed, %d Failed (insufficient_funds), each sent once; the last manager made %.0f settle reads, %.0f of them woken by events",
		name, completed, failed, reads, wakes)
	if withEvents {
		hooks, err := s.sandbox.WebhookStats(context.Background())
		g.Expect(err).NotTo(HaveOccurred())
		t.Logf("%s: webhooks %+v", name, hooks)
		g.Expect(hooks.Dropped).To(BeNumerically(">", 0), "events were dropped")
		g.Expect(hooks.Duplicated).To(BeNumerically(">", 0), "events were duplicated")
		g.Expect(hooks.Reordered).To(BeNumerically(">", 0), "events were reordered")
		g.Expect(hooks.Delivered).To(BeNumerically(">", 0), "events reached the managers")
		g.Expect(ms.sum("paymentjob_events_received_total", map[string]string{"result": "woken"})+
			ms.sum("paymentjob_events_received_total", map[string]string{"result": "coalesced"})).To(BeNumerically(">", 0),
			"the last manager was woken by events")
	}
}

// enableEvents gives the scenario's provider in ns spec.events and its
// signing Secret.
func (s *scenario) enableEvents(g Gomega, ns string) {
	ctx := context.Background()
	g.Expect(s.cluster.k8s.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sandbox-events", Namespace: ns,
			Labels: map[string]string{paymentsv1alpha1.LabelCredentials: "true"}},
		StringData: map[string]string{"endpointSecret": debitsSecret},
	})).To(Succeed())
	var pp paymentsv1alpha1.PaymentProvider
	g.Expect(s.cluster.k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: providerName}, &pp)).To(Succeed())
	pp.Spec.Events = &paymentsv1alpha1.ProviderEvents{SecretRef: paymentsv1alpha1.SecretKeyReference{Name: "sandbox-events", Key: "endpointSecret"}}
	g.Expect(s.cluster.k8s.Update(ctx, &pp)).To(Succeed())
}

// watchStalled polls the scenario's jobs until stop and returns every job
// seen Processing with Stalled=True, and why.
func (s *scenario) watchStalled() (stop func() []string) {
	var (
		mu   sync.Mutex
		seen = map[string]string{}
	)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if jobs, err := s.list(); err == nil {
				for key, j := range jobs {
					c := meta.FindStatusCondition(j.Status.Conditions, paymentsv1alpha1.ConditionStalled)
					if j.Status.Phase == paymentsv1alpha1.PhaseProcessing && c != nil && c.Status == metav1.ConditionTrue {
						mu.Lock()
						seen[key] = c.Reason + ": " + c.Message
						mu.Unlock()
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return func() []string {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		out := make([]string, 0, len(seen))
		for key, why := range seen {
			out = append(out, key+" "+strings.TrimSpace(why))
		}
		sort.Strings(out)
		return out
	}
}
