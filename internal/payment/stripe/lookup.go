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

package stripe

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	stripego "github.com/stripe/stripe-go/v85"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

const (
	// searchLimit is the number of intents one search request reads,
	// Stripe's maximum.
	searchLimit = 100
	// maxSearchPages is the most search requests one Lookup sends; more
	// matching intents than fit in them is an error.
	maxSearchPages = 10
)

// Lookup finds every PaymentIntent whose metadata entry
// payment.MetadataKeyIdempotencyKey is one of keys, whatever its status,
// with one request to Stripe's Search API, the keys' clauses joined by OR,
// followed by its next pages while Stripe has more (at most maxSearchPages
// requests of searchLimit intents). Each intent is returned under its key
// with its state and the fingerprint of its metadata, newest first.
//
// Zero keys return an empty map without a request. More than
// payment.MaxLookupKeys keys, or a key that payment.ValidKey refuses, is an
// error without a request.
//
// Stripe's search index lags behind writes, usually by less than a minute
// and more during outages, so an intent created just before may be missing:
// an absent key means "not found now", not "never charged". Search has its
// own rate limit, lower than the API's (20 requests per second in live
// mode). Every error of Lookup is uncertain: it is a payment.TransientError,
// and a refusal of the search request is wrapped in one, since it says
// nothing about the charges.
func (p *Provider) Lookup(ctx context.Context, keys []string) (map[string][]payment.Found, error) {
	wanted, err := lookupKeys(keys)
	if err != nil {
		return nil, payment.Transient(err, 0)
	}
	found := make(map[string][]payment.Found)
	if len(wanted) == 0 {
		return found, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, payment.Transient(fmt.Errorf("cannot search payment intents: %w", err), 0)
	}

	query := searchQuery(keys)
	seen := make(map[string]bool)
	var next string
	for page := 0; ; page++ {
		if page == maxSearchPages {
			return nil, payment.Transient(fmt.Errorf(
				"cannot search payment intents: more than %d match the idempotency keys", maxSearchPages*searchLimit), 0)
		}
		params := &stripego.PaymentIntentSearchParams{
			SearchParams: stripego.SearchParams{
				Query:  query,
				Limit:  stripego.Int64(searchLimit),
				Single: true,
			},
		}
		if next != "" {
			params.Page = stripego.String(next)
		}
		list := p.client.V1PaymentIntents.Search(ctx, params)
		if err := list.Err(); err != nil {
			return nil, p.uncertain("cannot search payment intents", err)
		}
		for _, intent := range list.Data() {
			if intent == nil {
				continue
			}
			key := intent.Metadata[payment.MetadataKeyIdempotencyKey]
			if !wanted[key] {
				continue
			}
			if intent.ID == "" {
				return nil, payment.Transient(errors.New("a payment intent found by Stripe's search has no id"), 0)
			}
			if seen[intent.ID] {
				// Pages may overlap when intents are created meanwhile.
				continue
			}
			seen[intent.ID] = true
			found[key] = append(found[key], intentFound(intent))
		}
		meta := list.Meta()
		if !meta.HasMore {
			break
		}
		if meta.NextPage == nil || *meta.NextPage == "" {
			return nil, payment.Transient(errors.New("cannot search payment intents: Stripe has more results but named no next page"), 0)
		}
		next = *meta.NextPage
	}
	for _, charges := range found {
		newestFirst(charges)
	}
	return found, nil
}

// intentFound is intent as a charge found under the key in its metadata.
func intentFound(intent *stripego.PaymentIntent) payment.Found {
	return payment.Found{
		Key:         intent.Metadata[payment.MetadataKeyIdempotencyKey],
		Outcome:     outcome(intent, false),
		State:       stateOf(intent.Status),
		Fingerprint: intent.Metadata[payment.MetadataKeyFingerprint],
	}
}

// newestFirst sorts found by creation, newest first, then by id.
func newestFirst(found []payment.Found) {
	slices.SortStableFunc(found, func(a, b payment.Found) int {
		return cmp.Or(b.Created.Compare(a.Created), cmp.Compare(a.ID, b.ID))
	})
}

// lookupKeys checks the keys of a Lookup and returns them as a set.
func lookupKeys(keys []string) (map[string]bool, error) {
	if len(keys) > payment.MaxLookupKeys {
		return nil, fmt.Errorf("cannot look up %d idempotency keys at once: at most %d", len(keys), payment.MaxLookupKeys)
	}
	set := make(map[string]bool, len(keys))
	for _, key := range keys {
		if !payment.ValidKey(key) {
			return nil, errors.New("cannot look up an idempotency key that is not 1 to 255 visible ASCII characters")
		}
		set[key] = true
	}
	return set, nil
}

// searchQuery is the Search Query Language query that matches any of keys
// in the metadata entry payment.MetadataKeyIdempotencyKey: one clause per
// distinct key, in the order given, joined by OR.
func searchQuery(keys []string) string {
	clauses := make([]string, 0, len(keys))
	seen := make(map[string]bool, len(keys))
	for _, key := range keys {
		if seen[key] {
			continue
		}
		seen[key] = true
		clauses = append(clauses, searchClause(key))
	}
	return strings.Join(clauses, " OR ")
}

// searchClause is the clause that matches key in the metadata entry
// payment.MetadataKeyIdempotencyKey. Backslashes and quotes in key are
// escaped with a backslash.
func searchClause(key string) string {
	escaped := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(key)
	return fmt.Sprintf("metadata['%s']:'%s'", payment.MetadataKeyIdempotencyKey, escaped)
}

// stateOf classifies a PaymentIntent status. A status this package does not
// know is pending: it might still move money, so it is never charged around.
func stateOf(status stripego.PaymentIntentStatus) payment.ChargeState {
	switch status {
	case stripego.PaymentIntentStatusSucceeded, stripego.PaymentIntentStatusRequiresCapture:
		return payment.StateSucceeded
	case stripego.PaymentIntentStatusRequiresPaymentMethod, stripego.PaymentIntentStatusCanceled:
		return payment.StateNotCharged
	default:
		// processing, requires_action, requires_confirmation and any
		// status Stripe adds later. An intent waiting for the customer
		// is neither charged nor safe to charge around: Settle cancels
		// it, and only then is it not charged.
		return payment.StatePending
	}
}

// Settle reads the PaymentIntent with id, which Lookup found under key, with
// GET /v1/payment_intents/{id}, polls it like Charge while it is processing,
// and cancels it like Charge when it waits for a customer (requires_action,
// requires_confirmation), until it is final or ctx is done. It never creates
// an intent. A succeeded or requires_capture intent is an outcome
// (Replayed false); requires_payment_method and canceled are
// payment.Declined as in Charge. Every other error is a
// payment.TransientError, including an intent in another status, and an
// intent whose metadata does not carry key: it is not the charge the caller
// looked for.
func (p *Provider) Settle(ctx context.Context, key, id string) (payment.Outcome, error) {
	if err := p.beforeRead(ctx, "payment intent", key, id); err != nil {
		return payment.Outcome{}, err
	}
	intent, err := p.retrieve(ctx, id)
	if err != nil {
		return payment.Outcome{}, p.uncertain(fmt.Sprintf("cannot read payment intent %s", p.clean(id)), err)
	}
	if err := p.madeUnder("payment intent", id, intent.ID, key, intent.Metadata); err != nil {
		return payment.Outcome{}, err
	}
	return p.settle(ctx, intent, false)
}

// beforeRead checks, before anything is sent, the key and the id of the
// object (a payment intent, a refund) that is settled, and ctx. Each error
// is a payment.TransientError.
func (p *Provider) beforeRead(ctx context.Context, object, key, id string) error {
	switch {
	case !payment.ValidKey(key):
		return payment.Transient(fmt.Errorf("cannot settle a %s under an idempotency key that is not 1 to 255 visible ASCII characters", object), 0)
	case !validID(id):
		return payment.Transient(fmt.Errorf("cannot settle a %s without a valid id", object), 0)
	}
	if err := ctx.Err(); err != nil {
		return payment.Transient(fmt.Errorf("cannot read %s %s: %w", object, p.clean(id), err), 0)
	}
	return nil
}

// madeUnder checks that the object read by id is the one with id and
// carries key in its metadata: otherwise it is not what the caller looked
// for, and the error is a payment.TransientError.
func (p *Provider) madeUnder(object, id, got, key string, metadata map[string]string) error {
	switch carried := metadata[payment.MetadataKeyIdempotencyKey]; {
	case got != id:
		return payment.Transient(fmt.Errorf("reading %s %s answered another one, %q", object, p.clean(id), p.clean(got)), 0)
	case carried == "":
		return payment.Transient(fmt.Errorf("%s %s carries no idempotency key in its metadata, not the one it was looked up by",
			object, p.clean(id)), 0)
	case carried != key:
		return payment.Transient(fmt.Errorf("%s %s carries another idempotency key than the one it was looked up by",
			object, p.clean(id)), 0)
	}
	return nil
}

// validID reports whether id can be an object id sent to Stripe: not empty,
// visible ASCII.
func validID(id string) bool {
	return id != "" && payment.VisibleASCII(id)
}

// uncertain classifies err of a request that cannot have charged anything
// and whose failure says nothing about a charge: a refusal is wrapped in a
// payment.TransientError.
func (p *Provider) uncertain(op string, err error) error {
	mapped := p.classify(op, err)
	if r, ok := payment.IsRefusal(mapped); ok {
		return payment.Transient(fmt.Errorf("%s: %w", op, r), 0)
	}
	return mapped
}
