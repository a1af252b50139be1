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
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// pollInterval is how often the waits read the API server.
const pollInterval = 50 * time.Millisecond

// Test payment methods of the sandbox.
const (
	// PaymentMethodSucceeds is always charged.
	PaymentMethodSucceeds = sandbox.PaymentMethodVisa
	// PaymentMethodDeclined is always declined (CardDeclined).
	PaymentMethodDeclined = sandbox.PaymentMethodChargeDeclined
)

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
	return waitFor(ctx, e, &paymentsv1alpha1.PaymentJob{}, "PaymentJob", client.ObjectKey{Namespace: namespace, Name: name},
		what, timeout, done, func(job *paymentsv1alpha1.PaymentJob) string { return e.describe(job, &job.Status.PaymentStatus, "") })
}

// waitFor reads obj under key until done says it is where the test wants
// it, within timeout; the error names kind and what, and says where obj is
// with describe. One wait for both kinds, so that they fail alike.
func waitFor[T client.Object](ctx context.Context, e *Env, obj T, kind string, key client.ObjectKey, what string,
	timeout time.Duration, done func(T) (bool, error), describe func(T) string) (T, error) {
	err := wait.PollUntilContextTimeout(ctx, pollInterval, timeout, true, func(ctx context.Context) (bool, error) {
		if err := e.client.Get(ctx, key, obj); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return done(obj)
	})
	if err == nil {
		return obj, nil
	}
	if e.stopped() {
		err = fmt.Errorf("%w; the operator is not running", err)
	}
	return obj, fmt.Errorf("paymentjobtest: %s %s did not reach %s within %s (%w): %s", kind, key, what, timeout, err, describe(obj))
}

// describe is the phase, conditions and events of obj, whose status is
// st, for failures; more is said after the attempts.
func (e *Env) describe(obj client.Object, st *paymentsv1alpha1.PaymentStatus, more string) string {
	if obj.GetUID() == "" {
		return "it does not exist"
	}
	phase := string(st.Phase)
	if phase == "" {
		phase = "none yet"
	}
	return fmt.Sprintf("phase %s, attempts %d%s; conditions: %s; events: %s",
		phase, st.Attempts, more, describeConditions(st.Conditions), e.describeEvents(obj))
}

// describeConditions is "Type=Status Reason: message; ..." or "none".
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
