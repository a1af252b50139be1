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

package paymentjobtest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// Test payment methods of the sandbox.
const (
	// PaymentMethodSucceeds is always charged.
	PaymentMethodSucceeds = sandbox.PaymentMethodVisa
	// PaymentMethodDeclined is always declined (CardDeclined).
	PaymentMethodDeclined = sandbox.PaymentMethodChargeDeclined
)

// CreateProvider creates, in namespace, a PaymentProvider named name that
// charges at the sandbox through the real Stripe adapter, and its labelled
// Secret, and waits until the provider is Ready.
func (e *Env) CreateProvider(ctx context.Context, namespace, name string) error {
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-credentials", Namespace: namespace,
			Labels: map[string]string{paymentsv1alpha1.LabelCredentials: "true"}},
		StringData: map[string]string{"apiKey": "sk_test_paymentjobtest"},
	}
	if err := e.client.Create(ctx, secret); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("paymentjobtest: cannot create the provider's Secret: %w", err)
	}
	pp := &paymentsv1alpha1.PaymentProvider{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: paymentsv1alpha1.PaymentProviderSpec{Stripe: &paymentsv1alpha1.StripeProvider{
			APIBase:      e.server.URL,
			SecretKeyRef: paymentsv1alpha1.SecretKeyReference{Name: secret.Name, Key: "apiKey"},
		}},
	}
	if err := e.client.Create(ctx, pp); err != nil {
		return fmt.Errorf("paymentjobtest: cannot create the PaymentProvider: %w", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := e.client.Get(ctx, client.ObjectKeyFromObject(pp), pp); err != nil {
			return false, err
		}
		c := meta.FindStatusCondition(pp.Status.Conditions, paymentsv1alpha1.ConditionReady)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == pp.Generation, nil
	})
	if err != nil {
		return fmt.Errorf("paymentjobtest: PaymentProvider %s/%s is not Ready: %w (conditions: %s)",
			namespace, name, err, describeConditions(pp.Status.Conditions))
	}
	return nil
}

// WaitForPhase waits up to timeout until the job is in phase, and returns
// it. Otherwise the error says where the job is: its phase, its
// conditions and its events. A job that reached the other final phase
// (Failed instead of Completed, or Completed instead of Failed) fails the
// wait at once.
func (e *Env) WaitForPhase(ctx context.Context, namespace, name string, phase paymentsv1alpha1.PaymentJobPhase,
	timeout time.Duration) (*paymentsv1alpha1.PaymentJob, error) {
	return e.WaitFor(ctx, namespace, name, string(phase), timeout, func(job *paymentsv1alpha1.PaymentJob) (bool, error) {
		switch p := job.Status.Phase; p {
		case phase:
			return true, nil
		case paymentsv1alpha1.PhaseCompleted, paymentsv1alpha1.PhaseFailed:
			return false, fmt.Errorf("it is %s, which is final", p)
		}
		return false, nil
	})
}

// WaitFor waits up to timeout until done says the job is where the test
// wants it (what names that, for the error), and returns it. done may
// end the wait with an error. Otherwise the error says where the job is.
func (e *Env) WaitFor(ctx context.Context, namespace, name, what string, timeout time.Duration,
	done func(*paymentsv1alpha1.PaymentJob) (bool, error)) (*paymentsv1alpha1.PaymentJob, error) {
	job := &paymentsv1alpha1.PaymentJob{}
	key := client.ObjectKey{Namespace: namespace, Name: name}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := e.client.Get(ctx, key, job); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return done(job)
	})
	if err == nil {
		return job, nil
	}
	if e.stopped() {
		err = fmt.Errorf("%w; the operator is not running", err)
	}
	return job, fmt.Errorf("paymentjobtest: PaymentJob %s did not reach %s within %s (%w): %s", key, what, timeout, err, e.describe(job))
}

// describe is the job's phase, conditions and events, for failures.
func (e *Env) describe(job *paymentsv1alpha1.PaymentJob) string {
	phase := string(job.Status.Phase)
	if job.UID == "" {
		return "it does not exist"
	}
	if phase == "" {
		phase = "none yet"
	}
	var events eventsv1.EventList
	var seen []string
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.client.List(ctx, &events, client.InNamespace(job.Namespace)); err == nil {
		sort.Slice(events.Items, func(i, j int) bool {
			return events.Items[i].CreationTimestamp.Before(&events.Items[j].CreationTimestamp)
		})
		for _, ev := range events.Items {
			if ev.Regarding.UID == job.UID {
				seen = append(seen, fmt.Sprintf("%s %s: %s", ev.Type, ev.Reason, ev.Note))
			}
		}
	}
	if len(seen) == 0 {
		seen = []string{"none"}
	}
	return fmt.Sprintf("phase %s, attempts %d; conditions: %s; events: %s",
		phase, job.Status.Attempts, describeConditions(job.Status.Conditions), strings.Join(seen, "; "))
}

func describeConditions(cs []metav1.Condition) string {
	if len(cs) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s=%s %s: %s", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(parts, "; ")
}

// Charges is how many times the sandbox charged under the idempotency key
// the operator sent: "<namespace>/<spec.idempotencyKey or name>". A job
// paid exactly once has 1.
func (e *Env) Charges(key string) int {
	return e.engine.Stats().ChargesByKey[key]
}

// Faults switches the sandbox's faults.
func (e *Env) Faults() Faults { return Faults{engine: e.engine} }

// Faults are the sandbox's fault switches. Each takes effect for the
// requests that come after it.
type Faults struct{ engine *sandbox.Engine }

// Decline makes the sandbox decline paymentMethod from now on: the jobs
// that use it fail with CardDeclined and are not charged.
func (f Faults) Decline(paymentMethod string) { f.engine.DeclinePaymentMethod(paymentMethod) }

// LoseResponses charges the next n new payments and then answers them with
// a server error, as when the answer is lost on the way back: the operator
// retries with the same key and the sandbox replays the charge.
func (f Faults) LoseResponses(n int) { f.engine.FailNext(sandbox.FaultAfterCommit, n) }

// RateLimit answers the next n requests with 429 and a Retry-After of
// retryAfter (rounded up to seconds; zero is the sandbox's default).
func (f Faults) RateLimit(n int, retryAfter time.Duration) error {
	faults := f.engine.Faults()
	faults.RetryAfter = retryAfter
	if err := f.engine.SetFaults(faults); err != nil {
		return err
	}
	f.engine.FailNextAny(sandbox.FaultRateLimit, n)
	return nil
}

// Latency keeps each new payment in flight for between least and most
// before the sandbox decides it.
func (f Faults) Latency(least, most time.Duration) error {
	if least > most {
		return errors.New("paymentjobtest: the least latency is more than the most")
	}
	faults := f.engine.Faults()
	faults.LatencyMin, faults.LatencyMax = least, most
	return f.engine.SetFaults(faults)
}

// ForgetKeys makes the sandbox forget every idempotency key, as Stripe does
// after 24 hours; it returns how many it forgot. Charges stay.
func (f Faults) ForgetKeys() int { return f.engine.ForgetKeys() }

// Reset turns every fault off: latency, the pending LoseResponses and
// RateLimit counts, and the payment methods Decline added. Faults belong to
// the Env, not to a test: tests that switch them do not run in parallel.
func (f Faults) Reset() error {
	f.engine.ClearDeclines()
	for _, kind := range []sandbox.FaultKind{sandbox.FaultBeforeCommit, sandbox.FaultAfterCommit, sandbox.FaultRateLimit} {
		f.engine.FailNext(kind, 0)
		f.engine.FailNextAny(kind, 0)
	}
	return f.engine.SetFaults(sandbox.Faults{})
}
