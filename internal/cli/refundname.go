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
	"math/rand/v2"
	"strings"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/pkg/ledger"
)

// The name of a refund the plugin proposes (also its key) and the keys the
// operator sends, so that a name is never one the ledger or the provider
// already knows.

// refundName is --name once checked, or a drawn name no refund has used.
//
// A name the user gives must be checked against the ledger too: a name
// used before is how a refund comes to be finished from another's
// outcome. A drawn one is new unless the draw repeats one, so it is
// checked against what can be read, with a warning when the ledger cannot.
func (k *refundCheck) refundName(ctx context.Context) (string, error) {
	if k.o.name == "" {
		for range refundNameDraws {
			name := drawRefundName(k.t.Name, rand.IntN)
			if k.used(ctx, name) == "" {
				return name, nil
			}
		}
		return "", fmt.Errorf("no free PaymentRefund name after %d draws; name one with --name", refundNameDraws)
	}
	used := k.used(ctx, k.o.name)
	if used != "" {
		return "", notApplicable("--name %s was used already: %s. A PaymentRefund under a used key is finished from that "+
			"refund's outcome, and no money goes back; leave --name out, or name another", k.o.name, used)
	}
	if k.reader == nil {
		return "", &Error{Code: ExitCode(k.ledgerErr), Err: fmt.Errorf("cannot check --name %s against the outcome ledger: %w. "+
			"A PaymentRefund under a key the ledger holds is finished from that refund, and no money goes back: "+
			"leave --name out (a drawn name is new), or ask someone who may read the ledger", k.o.name, k.ledgerErr)}
	}
	return k.o.name, nil
}

// used says who has used name as a refund's key already ("" when none):
// a PaymentRefund of the namespace (its name or its key), the provider's
// list of the charge's refunds, or the ledger. A ledger that cannot be
// read is noted (reader nil, a warning).
func (k *refundCheck) used(ctx context.Context, name string) string {
	for _, rf := range k.live {
		switch {
		case rf.Name == name:
			return fmt.Sprintf("PaymentRefund %s/%s exists (follow it with kubectl payments status prefund/%s -n %s)",
				k.ns, name, name, k.ns)
		case effectiveKey(rf.Name, rf.Spec.IdempotencyKey) == name:
			return fmt.Sprintf("PaymentRefund %s/%s has that key", k.ns, rf.Name)
		}
	}
	key := unscoped(sentRefundKey(k.pay.scope, k.ns, name))
	if ch := k.atProvider; ch != nil {
		for _, r := range ch.Refunds {
			if unscoped(r.Key) == key {
				return fmt.Sprintf("the provider holds refund %s of charge %s under its key (%s %s)", r.ID, ch.ID, r.State,
					money(r.Amount, r.Currency))
			}
		}
	}
	if k.reader == nil {
		return ""
	}
	entries, err := k.reader.Find(ctx, ledger.RefundKey(k.ns, name))
	if err != nil {
		k.ledgerFailed(err)
		k.warnf("the outcome ledger could not be read (%v): the refund's name is not checked against it", k.ledgerErr)
		return ""
	}
	if len(entries) > 0 {
		e := entries[len(entries)-1]
		return fmt.Sprintf("the outcome ledger holds a refund under its key %s (%s, %s, %s, recorded %s)", e.Key, e.Outcome,
			orDash(e.Charge), money(e.Amount, e.Currency), e.At.Format(time.RFC3339))
	}
	return ""
}

// drawRefundName is job's name, cut to leave room, then "-refund-" and a
// suffix drawn with intN: a valid object name of at most 253 characters.
func drawRefundName(job string, intN func(int) int) string {
	suffix := make([]byte, refundSuffixLength)
	for i := range suffix {
		suffix[i] = refundSuffixAlphabet[intN(len(refundSuffixAlphabet))]
	}
	tail := "-refund-" + string(suffix)
	if room := maxObjectName - len(tail); len(job) > room {
		job = strings.TrimRight(job[:room], "-.")
	}
	return job + tail
}

// unscoped is a sent key without its provider's key scope:
// "<namespace>[.refund]/<key>".
func unscoped(key string) string {
	scope, rest, ok := strings.Cut(key, ":")
	if ok && !strings.Contains(scope, "/") {
		return rest
	}
	return key
}

// effectiveKey is an object's idempotency key: spec.idempotencyKey, or
// its name.
func effectiveKey(name, specKey string) string {
	if specKey != "" {
		return specKey
	}
	return name
}

// sentJobKey is the key the operator sends for a PaymentJob with key in
// namespace through a PaymentProvider with key scope scope
// ("[<scope>:]<namespace>/<key>", hashed when too long), as
// internal/payment.ScopedKey forms it: a scope is prefixed to the
// namespace before the key is hashed.
func sentJobKey(scope, namespace, key string) string {
	if scope != "" {
		namespace = scope + ":" + namespace
	}
	return ledger.SentKey(namespace, key)
}

// sentRefundKey is sentJobKey for a PaymentRefund, as
// internal/payment.RefundKey forms it.
func sentRefundKey(scope, namespace, key string) string {
	if scope != "" {
		namespace = scope + ":" + namespace
	}
	return ledger.RefundKey(namespace, key)
}
