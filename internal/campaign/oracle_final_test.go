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

package campaign

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// outcome is what a finished object said: its phase and the provider's
// id of its charge or refund.
type outcome struct {
	phase paymentsv1alpha1.PaymentJobPhase
	id    string
}

// finalViolations: an outcome, once written, is final. A Completed or
// Failed object never goes back to Pending or Processing, nor to another
// outcome or another provider id: what GitOps health checks, kubectl wait
// and every person read as done stays done. The one change the product
// makes on purpose is a Completed refund that the provider failed later
// (RefundFailedAfterSuccess: Failed, naming the same refund). It is
// checked on every object of the same UID (a re-created object is
// another object, and may finish anew from the ledger).
func (c *campaign) finalViolations(b books) []string {
	if c.outcomes == nil {
		c.outcomes = map[types.UID]outcome{}
	}
	var v []string
	see := func(kind, name string, uid types.UID, st *paymentsv1alpha1.PaymentStatus, failedLater bool) {
		now := outcome{phase: st.Phase, id: responseID(st.ProviderResponse)}
		was, seen := c.outcomes[uid]
		switch {
		case !seen && finished(now.phase):
			c.outcomes[uid] = now
		case !seen, was == now:
		case failedLater && was.phase == paymentsv1alpha1.PhaseCompleted && now.phase == paymentsv1alpha1.PhaseFailed && was.id == now.id:
			c.outcomes[uid] = now
		default:
			v = append(v, fmt.Sprintf("outcome-final: %s %s was %s as %q and is now %q as %q", kind, name, was.phase, was.id, now.phase, now.id))
		}
	}
	for i := range b.jobs {
		j := &b.jobs[i]
		see("PaymentJob", j.Namespace+"/"+j.Name, j.UID, j.GetPaymentStatus(), false)
	}
	for i := range b.refs {
		rf := &b.refs[i]
		see("PaymentRefund", rf.Namespace+"/"+rf.Name, rf.UID, rf.GetPaymentStatus(),
			readyReason(rf.Status.Conditions) == paymentsv1alpha1.ReasonRefundFailedAfterSuccess)
	}
	return v
}
