//go:build postgres

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

package pgledger

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/pgserver"
	"github.com/idempotency-dev/paymentjob-operator/pkg/paymentjobtest"
)

// The ledger's database is down while a job finishes, a new job waits to be
// looked up and a refund of a job that is gone asks for its charge: every
// one of them says the operator's ledger is unavailable, and none of their
// conditions, failures or events names the database's user, database, host
// or port (a tenant reads them; the manager's log has the details).
func TestUnavailableLedgerIsDescribedWithoutItsConnectionDetails(t *testing.T) {
	t.Parallel()
	// Names no message of the operator would hold by chance.
	const user, database = "ledgerwriter_q7x", "outcomes_q7x"
	s := newScenarioOn(t, func(db *pgserver.Server) string {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, db.DSN("postgres"))
		if err != nil {
			t.Fatalf("cannot connect to the server: %v", err)
		}
		defer conn.Close(ctx)
		for _, stmt := range []string{
			"CREATE ROLE " + user + " LOGIN",
			"CREATE DATABASE " + database + " OWNER " + user,
		} {
			if _, err := conn.Exec(ctx, stmt); err != nil {
				t.Fatalf("cannot run %q: %v", stmt, err)
			}
		}
		return fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable", user, db.Addr(), database)
	}, nil)
	ctx := t.Context()
	_, port, err := net.SplitHostPort(s.db.Addr())
	s.Expect(err).NotTo(HaveOccurred())
	// The host is the loopback address the sandbox (the provider's
	// endpoint, which tenants may read) listens on too: the database's
	// is told by its port.
	details := map[string]*regexp.Regexp{
		"the database's user":          regexp.MustCompile(regexp.QuoteMeta(user)),
		"the database's name":          regexp.MustCompile(regexp.QuoteMeta(database)),
		"the database's host and port": regexp.MustCompile(regexp.QuoteMeta(s.db.Addr())),
		"the database's port":          regexp.MustCompile(`\b` + port + `\b`),
		"the driver's connect error":   regexp.MustCompile(`failed to connect|dial tcp`),
	}

	// A job whose charge is on its way when the database goes down.
	gate := s.kit.Sandbox().Hold()
	t.Cleanup(gate.Release)
	s.createJobs("finished")
	select {
	case <-gate.Entered():
	case <-time.After(timeout):
		t.Fatalf("the charge of job finished did not reach the sandbox within %s", timeout)
	}
	s.db.Kill(t)
	s.createJobs("waiting")
	refund, err := s.kit.CreateRefund(ctx, s.ns, "refund-of-gone", "gone",
		paymentjobtest.RefundOptions{Provider: providerName})
	s.Expect(err).NotTo(HaveOccurred())
	gate.Release()

	var finished, waiting paymentsv1alpha1.PaymentJob
	s.Eventually(func(g Gomega) {
		jobs := s.jobs(g)
		finished, waiting = jobs["finished"], jobs["waiting"]
		g.Expect(finished.Status.Phase).To(Equal(paymentsv1alpha1.PhaseCompleted), "finished: %s", ready(&finished))
		g.Expect(controllerutil.ContainsFinalizer(&finished, paymentsv1alpha1.Finalizer)).To(BeTrue(),
			"finished keeps its finalizer while its outcome cannot be recorded")
		g.Expect(waitingForLedger(&waiting)).To(BeTrue(), "waiting waits for the ledger: %s", ready(&waiting))
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(refund), refund)).To(Succeed())
		c := meta.FindStatusCondition(refund.Status.Conditions, paymentsv1alpha1.ConditionReady)
		g.Expect(c).NotTo(BeNil(), "the refund's Ready condition")
		g.Expect(c.Reason).To(Equal(paymentsv1alpha1.ReasonLedgerUnavailable), "the refund: %s", c.Message)
	}, timeout, poll).Should(Succeed())

	for _, obj := range []client.Object{&finished, &waiting, refund} {
		_, err := s.kit.WaitForEvent(ctx, obj, paymentsv1alpha1.ReasonLedgerUnavailable, timeout)
		s.Expect(err).NotTo(HaveOccurred(), "the LedgerUnavailable event of %s", obj.GetName())
	}
	// What a tenant reads of each: the whole status, and every event.
	for _, obj := range []client.Object{&finished, &waiting, refund} {
		s.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		status, err := json.Marshal(statusOf(obj))
		s.Expect(err).NotTo(HaveOccurred())
		events, err := s.kit.Events(ctx, obj)
		s.Expect(err).NotTo(HaveOccurred())
		texts := make([]string, 0, 1+len(events))
		texts = append(texts, "status: "+string(status))
		for _, ev := range events {
			texts = append(texts, fmt.Sprintf("event %s: %s", ev.Reason, ev.Note))
		}
		for what, re := range details {
			for _, text := range texts {
				s.Expect(re.MatchString(text)).To(BeFalse(), "%s of %s names %s:\n%s", strings.SplitN(text, ":", 2)[0],
					obj.GetName(), what, text)
			}
		}
	}
	for _, obj := range []client.Object{&waiting, refund} {
		c := meta.FindStatusCondition(conditionsOf(obj), paymentsv1alpha1.ConditionReady)
		s.Expect(c.Message).To(ContainSubstring("the operator's ledger is unavailable"), "the Ready condition of %s", obj.GetName())
		s.Expect(c.Message).To(ContainSubstring("manager's log"), "the Ready condition of %s says where the cause is", obj.GetName())
	}
}

// conditionsOf returns the conditions of a PaymentJob or a PaymentRefund.
func conditionsOf(obj client.Object) []metav1.Condition {
	switch o := obj.(type) {
	case *paymentsv1alpha1.PaymentJob:
		return o.Status.Conditions
	case *paymentsv1alpha1.PaymentRefund:
		return o.Status.Conditions
	}
	panic(fmt.Sprintf("not a payment: %T", obj))
}

// statusOf returns the whole status of a PaymentJob or a PaymentRefund.
func statusOf(obj client.Object) any {
	switch o := obj.(type) {
	case *paymentsv1alpha1.PaymentJob:
		return o.Status
	case *paymentsv1alpha1.PaymentRefund:
		return o.Status
	}
	panic(fmt.Sprintf("not a payment: %T", obj))
}
