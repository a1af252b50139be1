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

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// refundWords reads every condition and event that the suite's managers
// write on a PaymentRefund, and says which speak of charging: a refund's
// user reads of refunding. The engine words every message from its kind's
// Words; this is the check that nothing of a charge's wording leaks into a
// refund (issue 39). The resolve annotation's values (charged=<id>,
// not-charged) are the API, not wording, and are left out.
type refundWords struct {
	mu         sync.Mutex
	conditions map[string]string // message -> where it was seen
	stop       context.CancelFunc
	done       chan struct{}
}

// speaksOfCharging matches wording that speaks of charging. "charge", the
// noun, is a refund's word too: it names the charge refunded.
var speaksOfCharging = regexp.MustCompile(`(?i)\bcharg(ing|ed)\b|\bpayment job\b`)

// annotationValues are the resolve annotation's values, which messages
// quote.
var annotationValues = strings.NewReplacer("charged=", "", "not-charged", "")

// watchRefundWords starts reading the conditions of every PaymentRefund.
func watchRefundWords(c client.WithWatch) *refundWords {
	ctx, cancel := context.WithCancel(context.Background())
	w := &refundWords{conditions: map[string]string{}, stop: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			watcher, err := c.Watch(ctx, &paymentsv1alpha1.PaymentRefundList{})
			if err != nil {
				continue
			}
			for ev := range watcher.ResultChan() {
				if rf, ok := ev.Object.(*paymentsv1alpha1.PaymentRefund); ok && ev.Type != watch.Deleted {
					w.note(rf)
				}
			}
			watcher.Stop()
		}
	}()
	return w
}

func (w *refundWords) note(rf *paymentsv1alpha1.PaymentRefund) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, c := range rf.Status.Conditions {
		w.conditions[c.Message] = fmt.Sprintf("condition %s=%s %s of %s/%s", c.Type, c.Status, c.Reason, rf.Namespace, rf.Name)
	}
	if f := rf.Status.Failure; f != nil {
		w.conditions[f.Message] = fmt.Sprintf("status.failure %s of %s/%s", f.Reason, rf.Namespace, rf.Name)
	}
}

// check stops the watch, reads every event about a PaymentRefund, and
// returns what speaks of charging; seen counts what was read, so that a
// suite that wrote nothing on refunds cannot pass for one that wrote well.
func (w *refundWords) check(ctx context.Context, c client.Client) (bad []string, seen int, err error) {
	w.stop()
	<-w.done
	var events eventsv1.EventList
	if err := c.List(ctx, &events); err != nil {
		return nil, 0, fmt.Errorf("cannot list the events: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for msg, where := range w.conditions {
		seen++
		if speaksOfCharging.MatchString(annotationValues.Replace(msg)) {
			bad = append(bad, fmt.Sprintf("%s: %q", where, msg))
		}
	}
	for _, e := range events.Items {
		if e.Regarding.Kind != "PaymentRefund" {
			continue
		}
		seen++
		where := fmt.Sprintf("event %s/%s %s of %s/%s", e.Action, e.Type, e.Reason, e.Regarding.Namespace, e.Regarding.Name)
		if strings.EqualFold(e.Action, "Charge") || speaksOfCharging.MatchString(annotationValues.Replace(e.Note)) {
			bad = append(bad, fmt.Sprintf("%s: %q", where, e.Note))
		}
	}
	return bad, seen, nil
}
