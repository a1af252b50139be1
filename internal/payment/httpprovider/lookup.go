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

package httpprovider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// keyParameter is the query parameter that carries each key looked up.
const keyParameter = "key"

// chargeParameter is the query parameter that carries the charge whose
// refunds are looked up.
const chargeParameter = "charge"

// maxAccountLength bounds the account identifier the service names.
const maxAccountLength = 255

var (
	_ payment.Provider   = (*LookupProvider)(nil)
	_ payment.Looker     = (*LookupProvider)(nil)
	_ payment.Identifier = (*LookupProvider)(nil)
)

// LookupProvider is a Provider whose service has a lookup endpoint: a
// payment.Looker that finds charges by their idempotency key and a
// payment.Identifier that names the service's account. New returns one when
// Config.LookupURL is set. It is safe for concurrent use.
type LookupProvider struct {
	*Provider

	lookupURL       *url.URL
	pollInterval    time.Duration
	maxPollInterval time.Duration
}

// lookupResponse is the JSON body of a 200 answer of the lookup endpoint.
type lookupResponse struct {
	Account string `json:"account"`
	// Charges is nil when the body has no charges array.
	Charges *[]lookupCharge `json:"charges"`
	// Refunds is nil when the body has no refunds array.
	Refunds *[]lookupRefund `json:"refunds"`
}

// lookupRefund is one refund of a lookup answer: the fields of a charge,
// and the charge it refunds.
type lookupRefund struct {
	lookupCharge
	Charge string `json:"charge"`
}

// lookupCharge is one charge of a lookup answer.
type lookupCharge struct {
	answerItem
	Fingerprint string `json:"fingerprint"`
	Reason      string `json:"reason"`
	Message     string `json:"message"`
	// Method is the payment method type of a payment that settles later;
	// optional.
	Method string `json:"method"`
}

// answerItem is what every item of a lookup or list answer has.
type answerItem struct {
	ID             string          `json:"id"`
	IdempotencyKey string          `json:"idempotencyKey"`
	Status         string          `json:"status"`
	Amount         *int64          `json:"amount"`
	Currency       string          `json:"currency"`
	Created        json.RawMessage `json:"created"`
}

// check refuses an item without an id (noID), or without an amount or
// currency (the item's, as its reader cleans it), or with a malformed
// created time, and returns its created time. Every error is a
// payment.TransientError; named says the item with its id, at the start
// of the last two.
func (it answerItem) check(currency string, noID error, named func(id string) string) (time.Time, error) {
	switch {
	case it.ID == "":
		return time.Time{}, payment.Transient(noID, 0)
	case it.Amount == nil || currency == "":
		return time.Time{}, payment.Transient(fmt.Errorf("%s without an amount or a currency", named(it.ID)), 0)
	}
	created, err := parseCreated(it.Created)
	if err != nil {
		return time.Time{}, payment.Transient(fmt.Errorf("%s that is malformed: %w", named(it.ID), err), 0)
	}
	return created, nil
}

// Lookup sends one GET to the lookup endpoint with each of keys as a key
// parameter and returns every charge the answer holds under one of them;
// charges under other keys are ignored. keys must be 1 to
// payment.MaxLookupKeys valid keys, or nothing is sent. Every error is a
// payment.TransientError: nothing is known about any of the keys.
func (p *LookupProvider) Lookup(ctx context.Context, keys []string) (map[string][]payment.Found, error) {
	if err := checkKeys(keys); err != nil {
		return nil, err
	}
	charges, err := p.lookup(ctx, keys)
	if err != nil {
		return nil, err
	}
	found := make(map[string][]payment.Found)
	for _, c := range charges {
		f, err := p.found(c, chargeOp)
		if err != nil {
			return nil, err
		}
		found[f.Key] = append(found[f.Key], f)
	}
	return found, nil
}

// Settle looks key up until the charge with id is final, waiting between two
// lookups from the poll interval, doubling to the maximum, until ctx is done.
// A charge that succeeded is its outcome, one that ended without moving money
// a payment.Declined refusal; a charge the lookup does not hold, a failed
// lookup or a charge still pending when ctx is done is a
// payment.TransientError. It never sends a charge.
func (p *LookupProvider) Settle(ctx context.Context, key, id string) (payment.Outcome, error) {
	return p.settle(ctx, chargeOp, key, id, func() (*lookupCharge, error) {
		charges, err := p.lookup(ctx, []string{key})
		var charge *lookupCharge
		for i := range charges {
			if charges[i].ID == id {
				charge = &charges[i]
			}
		}
		return charge, err
	})
}

// settle reads the entry (a charge, a refund: op) with id under key with
// read, a lookup, until it is final, waiting between two lookups from the
// poll interval, doubling to the maximum, until ctx is done. read returns
// nil when the lookup holds no entry with id under key. A key or an id that
// cannot be settled is an error before anything is sent.
func (p *LookupProvider) settle(ctx context.Context, op operation, key, id string, read func() (*lookupCharge, error)) (payment.Outcome, error) {
	if err := checkKeys([]string{key}); err != nil {
		return payment.Outcome{}, err
	}
	if id == "" {
		return payment.Outcome{}, payment.Transient(fmt.Errorf("cannot settle a %s without an id", op.noun), 0)
	}
	wait := p.pollInterval
	for {
		entry, err := read()
		if err != nil {
			return payment.Outcome{}, p.settleError(op, id, err)
		}
		if entry == nil {
			return payment.Outcome{}, payment.Transient(fmt.Errorf(
				"cannot settle %[1]s %[2]s: the payment service's lookup endpoint holds no %[1]s with this id under the key", op.noun, p.clean(id)), 0)
		}
		f, err := p.found(*entry, op)
		if err != nil {
			return payment.Outcome{}, p.settleError(op, id, err)
		}
		status := strings.ToLower(strings.TrimSpace(f.Status))
		switch f.State {
		case payment.StateSucceeded:
			return f.Outcome, nil
		case payment.StateNotCharged:
			return payment.Outcome{}, p.declined(op, op.noun+" "+p.clean(id), status, entry.Reason, entry.Message)
		}
		if status == "processing" {
			// Accepted, not settled (a bank debit): read again later,
			// not polled within this call. "pending" is in flight, and
			// polled.
			return payment.Outcome{}, payment.Settling(f.ID, status, p.clean(entry.Method))
		}

		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return payment.Outcome{}, op.pending(fmt.Errorf("%s %s is still %q: %w", op.noun, p.clean(id), p.clean(status), ctx.Err()), 0)
		case <-timer.C:
		}
		wait = min(2*wait, p.maxPollInterval)
	}
}

// Account sends one GET to the lookup endpoint without keys and returns the
// answer's account, or "" when it names none. Every error is a
// payment.TransientError.
func (p *LookupProvider) Account(ctx context.Context) (string, error) {
	body, err := p.get(ctx, url.Values{})
	if err != nil {
		return "", err
	}
	account := strings.TrimSpace(body.Account)
	if len(account) > maxAccountLength || !payment.PrintableASCII(account) {
		return "", payment.Transient(fmt.Errorf(
			"payment service's lookup endpoint named an account that is longer than %d characters or not printable ASCII", maxAccountLength), 0)
	}
	return account, nil
}

// checkKeys refuses, before anything is sent, a lookup of no keys, of more
// than payment.MaxLookupKeys, or of a key that cannot be sent.
func checkKeys(keys []string) error {
	if len(keys) == 0 || len(keys) > payment.MaxLookupKeys {
		return payment.Transient(fmt.Errorf(
			"cannot look up %d keys: one lookup takes 1 to %d", len(keys), payment.MaxLookupKeys), 0)
	}
	for _, k := range keys {
		if !payment.ValidKey(k) {
			return payment.Transient(errors.New(
				"cannot look up a key that is not 1 to 255 visible ASCII characters"), 0)
		}
	}
	return nil
}

// lookup returns the charges of the lookup answer for keys that carry one of
// keys.
func (p *LookupProvider) lookup(ctx context.Context, keys []string) ([]lookupCharge, error) {
	body, err := p.get(ctx, keyQuery(keys))
	if err != nil {
		return nil, err
	}
	if body.Charges == nil {
		return nil, payment.Transient(errors.New(
			"payment service's lookup endpoint answered 200 OK without a charges array, so nothing is known about the keys"), 0)
	}
	asked := make(map[string]bool, len(keys))
	for _, k := range keys {
		asked[k] = true
	}
	var charges []lookupCharge
	for _, c := range *body.Charges {
		if asked[c.IdempotencyKey] {
			charges = append(charges, c)
		}
	}
	return charges, nil
}

// found maps a charge (or a refund: op) of a lookup answer. One without an
// id, an amount or a currency, or with a malformed created time, is a
// transient error.
func (p *LookupProvider) found(c lookupCharge, op operation) (payment.Found, error) {
	prefix := "payment service's lookup endpoint answered a " + op.noun
	created, err := c.check(c.Currency, errors.New(prefix+" without an id, so nothing is known about the keys"),
		func(id string) string { return prefix + " " + p.clean(id) })
	if err != nil {
		return payment.Found{}, err
	}
	return payment.Found{
		Key: c.IdempotencyKey,
		Outcome: payment.Outcome{
			ID:       c.ID,
			Status:   c.Status,
			Amount:   *c.Amount,
			Currency: c.Currency,
			Created:  created,
		},
		State:       chargeState(c.Status),
		Fingerprint: c.Fingerprint,
	}, nil
}

// chargeState classifies the status of a charge found by its key, without
// regard to case or surrounding spaces. A status the contract does not name
// is pending: an unknown charge may still move money, so it is never charged
// around.
func chargeState(status string) payment.ChargeState {
	switch strings.ToLower(strings.TrimSpace(status)) {
	case "succeeded", "paid", "completed":
		return payment.StateSucceeded
	case "failed", "declined", "canceled", "cancelled", "rejected":
		return payment.StateNotCharged
	default:
		return payment.StatePending
	}
}

// get sends one GET to the lookup endpoint with the parameters of q and
// decodes a 200 answer. Anything else is a payment.TransientError.
func (p *LookupProvider) get(ctx context.Context, q url.Values) (lookupResponse, error) {
	var body lookupResponse
	err := p.getJSON(ctx, lookupEndpoint, withQuery(p.lookupURL, q.Encode()), &body)
	return body, err
}

// keyQuery is one key parameter per distinct key.
func keyQuery(keys []string) url.Values {
	q := url.Values{}
	for _, k := range keys {
		if !slices.Contains(q[keyParameter], k) {
			q.Add(keyParameter, k)
		}
	}
	return q
}

// settleError is err, a failed lookup, said of op's entry with id; it
// keeps err's Retry-After.
func (p *LookupProvider) settleError(op operation, id string, err error) error {
	cause := err
	var t *payment.TransientError
	if errors.As(err, &t) && t.Err != nil {
		cause = t.Err
	}
	return payment.Transient(fmt.Errorf("cannot settle %s %s: %w", op.noun, p.clean(id), cause), payment.RetryAfter(err))
}
