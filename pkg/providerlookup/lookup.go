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

// Package providerlookup asks a PaymentProvider's payment provider, read
// only, what it holds under one idempotency key: the charges made under the
// key and, for those that moved money, their refunds. It is the lookup the
// operator makes before a job's first charge, for a client program such as
// a kubectl plugin: the same provider kinds, the same adapters, the same
// egress policy and the same rules for reading the credential. It never
// charges, refunds, cancels or writes anything, at the provider or in the
// cluster; the only API request it makes is a get of the provider's
// credential Secret.
package providerlookup

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/egress"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
)

// DefaultTimeout bounds a lookup whose Options.Timeout is zero.
const DefaultTimeout = 30 * time.Second

var (
	// ErrUnsupported says the provider cannot look charges up by their key
	// (an http provider without spec.http.lookupURL).
	ErrUnsupported = errors.New("the provider cannot look charges up by their idempotency key")
	// ErrEndpointRefused says one of the provider's URLs is not allowed by
	// the egress policy of Options.InsecureHosts; the error names the
	// field.
	ErrEndpointRefused = providercache.ErrEndpointRefused
	// ErrNoCredentials says the provider's credential Secret cannot be
	// used: it does not exist (the error also satisfies
	// apierrors.IsNotFound), it lacks the label
	// payments.idempotency.dev/credentials: "true" that marks it for the
	// operator, or it has no value at the referenced key.
	ErrNoCredentials = providercache.ErrNoCredentials
)

// Options configure a lookup.
type Options struct {
	// InsecureHosts are the host names or IP addresses, without a port,
	// that the lookup may call over plain http and at loopback or private
	// addresses, as the manager's --insecure-provider-hosts flag lists
	// them; every other URL must be https to a public address. A sandbox
	// on 127.0.0.1 needs "127.0.0.1".
	InsecureHosts []string
	// Timeout bounds the whole lookup; DefaultTimeout when zero.
	Timeout time.Duration
}

// Charge is a charge the provider holds under the key.
type Charge struct {
	// ID is the provider's id of the charge (Stripe: the PaymentIntent).
	ID string `json:"id"`
	// Key is the idempotency key the charge carries.
	Key string `json:"key"`
	// State says what the charge means for the job that sent the key:
	// Succeeded (money moved), Pending (not final, may still move money)
	// or NotCharged (ended without moving money).
	State string `json:"state"`
	// Status is the provider's own word for the charge's state, such as
	// succeeded or requires_payment_method.
	Status string `json:"status,omitempty"`
	// Amount charged, in the currency's minor unit.
	Amount int64 `json:"amount"`
	// Currency is the lower-case ISO 4217 code.
	Currency string `json:"currency"`
	// Created is when the provider created the charge.
	Created time.Time `json:"created"`
	// Fingerprint is the request fingerprint the operator stored with the
	// charge, to compare with a job's status; empty for a charge made
	// without one.
	Fingerprint string `json:"fingerprint,omitempty"`
	// RefundsListed is true when the provider was asked for the charge's
	// refunds: only for a charge that succeeded, and not for an http
	// provider without spec.http.refundURL, which cannot refund.
	RefundsListed bool `json:"refundsListed"`
	// Refunds are the charge's refunds that carry an idempotency key (the
	// operator's PaymentRefunds), newest first under each key.
	Refunds []Refund `json:"refunds,omitempty"`
	// Refunded sums the amounts of every refund of the charge that
	// succeeded or is pending, including refunds made without a key (at
	// an http provider, only the ones its lookup answers).
	Refunded int64 `json:"refunded,omitempty"`
}

// Refund is a refund of a charge.
type Refund struct {
	// ID is the provider's id of the refund.
	ID string `json:"id"`
	// Key is the idempotency key the refund carries.
	Key string `json:"key"`
	// State is Succeeded, Pending or NotCharged (the refund failed or was
	// canceled, no money went back).
	State string `json:"state"`
	// Status is the provider's own word for the refund's state.
	Status string `json:"status,omitempty"`
	// Amount refunded, in the currency's minor unit.
	Amount int64 `json:"amount"`
	// Currency is the lower-case ISO 4217 code.
	Currency string `json:"currency"`
	// Created is when the provider created the refund.
	Created time.Time `json:"created"`
}

// Lookup asks the provider of pp what it holds under key, the exact key the
// operator sent (a PaymentJob's status.idempotencyKey), newest first. It
// checks pp's URLs against the egress policy of opts first (a refused URL
// is an error wrapping ErrEndpointRefused that names the field), then reads
// pp's credential Secret through c, as the operator does (the caller needs
// get on that Secret; an error of the API server is wrapped, so that
// apierrors.IsNotFound and apierrors.IsForbidden still hold), and then
// sends the lookup and, for each charge that succeeded, lists its refunds.
//
// No charge under key is an empty slice and a nil error. A provider that
// cannot look charges up is ErrUnsupported. Any other error means nothing
// is known about the key. Stripe's search index lags behind writes, usually
// by less than a minute: a charge made just before may be missing. The
// credential never appears in an error.
func Lookup(ctx context.Context, c client.Reader, pp *paymentsv1alpha1.PaymentProvider, key string, opts Options) ([]Charge, error) {
	if key == "" {
		return nil, errors.New("cannot look up charges: the idempotency key is empty")
	}
	var charges []Charge
	err := withProvider(ctx, c, pp, opts, "look up charges", func(ctx context.Context, provider payment.Provider) error {
		var err error
		charges, err = lookup(ctx, provider, pp, key)
		return err
	})
	return charges, err
}

// Account returns the account the provider of pp reaches now, with the
// credential its Secret holds now: what the operator records as
// status.provider.account of each payment it sends. A payment recorded
// under another account was made elsewhere, and what the provider says
// now is not about it. A provider that does not name its account (an
// http service) returns "". It reads the Secret and calls the provider as
// Lookup does, and changes nothing.
func Account(ctx context.Context, c client.Reader, pp *paymentsv1alpha1.PaymentProvider, opts Options) (string, error) {
	var account string
	err := withProvider(ctx, c, pp, opts, "identify the account", func(ctx context.Context, provider payment.Provider) error {
		idf, ok := provider.(payment.Identifier)
		if !ok {
			return nil
		}
		var err error
		account, err = idf.Account(ctx)
		return err
	})
	return account, err
}

// withProvider checks pp's URLs against the egress policy of opts, reads
// its credential through c, builds its adapter as the manager does and
// hands it to fn, within opts' timeout. Errors name what and pp, and never
// hold the credential.
func withProvider(ctx context.Context, c client.Reader, pp *paymentsv1alpha1.PaymentProvider, opts Options, what string,
	fn func(context.Context, payment.Provider) error) error {
	if pp == nil {
		return fmt.Errorf("cannot %s: no PaymentProvider", what)
	}
	policy, err := policyOf(opts)
	if err != nil {
		return err
	}
	if err := providercache.CheckKind(pp.Spec); err != nil {
		return fmt.Errorf("cannot use PaymentProvider %s/%s: %w", pp.Namespace, pp.Name, err)
	}
	for _, u := range providercache.ProviderURLs(pp.Spec) {
		if err := policy.CheckURL(u.Field, u.URL); err != nil {
			return fmt.Errorf("cannot call PaymentProvider %s/%s: %w: %w", pp.Namespace, pp.Name, ErrEndpointRefused, err)
		}
	}
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	credential, err := readCredential(ctx, c, pp)
	if err != nil {
		return err
	}
	provider, err := providercache.NewAdapterFactory(policy)(pp.Spec, credential)
	if err == nil {
		err = fn(ctx, provider)
	}
	if err != nil {
		return redact(fmt.Errorf("cannot %s at PaymentProvider %s/%s: %w", what, pp.Namespace, pp.Name, err), credential)
	}
	return nil
}

// policyOf is the egress policy of opts.
func policyOf(opts Options) (*egress.Policy, error) {
	hosts, err := egress.ParseHosts(strings.Join(opts.InsecureHosts, ","))
	if err != nil {
		return nil, fmt.Errorf("invalid insecure hosts: %w", err)
	}
	return &egress.Policy{InsecureHosts: hosts}, nil
}

// lookup asks provider for key and for the refunds of each charge under
// it that succeeded.
func lookup(ctx context.Context, provider payment.Provider, pp *paymentsv1alpha1.PaymentProvider, key string) ([]Charge, error) {
	looker, ok := provider.(payment.Looker)
	if !ok {
		return nil, ErrUnsupported
	}
	found, err := looker.Lookup(ctx, []string{key})
	if err != nil {
		return nil, err
	}
	refunder, canRefund := provider.(payment.Refunder)
	canRefund = canRefund && refundsConfigured(pp.Spec)

	charges := make([]Charge, 0, len(found[key]))
	for _, f := range found[key] {
		ch := chargeOf(f)
		if canRefund && f.State == payment.StateSucceeded {
			book, err := payment.ListRefunds(ctx, refunder, f.ID)
			if err != nil {
				return nil, fmt.Errorf("cannot list the refunds of charge %s: %w", f.ID, err)
			}
			ch.RefundsListed = true
			ch.Refunds = refundsOf(book)
			ch.Refunded = book.Refunded
		}
		charges = append(charges, ch)
	}
	return charges, nil
}

// refundsConfigured reports whether the provider can refund at all: an
// http provider without a refund endpoint cannot, and its lookup endpoint
// need not answer refunds.
func refundsConfigured(spec paymentsv1alpha1.PaymentProviderSpec) bool {
	return spec.HTTP == nil || spec.HTTP.RefundURL != ""
}

// chargeOf is the Charge of what the provider found.
func chargeOf(f payment.Found) Charge {
	return Charge{
		ID:          f.ID,
		Key:         f.Key,
		State:       string(f.State),
		Status:      f.Status,
		Amount:      f.Amount,
		Currency:    f.Currency,
		Created:     f.Created,
		Fingerprint: f.Fingerprint,
	}
}

// refundsOf lists the keyed refunds of book, newest first.
func refundsOf(book payment.RefundBook) []Refund {
	var refunds []Refund
	for _, found := range book.Refunds {
		for _, f := range found {
			refunds = append(refunds, Refund{ID: f.ID, Key: f.Key, State: string(f.State), Status: f.Status,
				Amount: f.Amount, Currency: f.Currency, Created: f.Created})
		}
	}
	slices.SortFunc(refunds, func(a, b Refund) int {
		return cmp.Or(b.Created.Compare(a.Created), cmp.Compare(a.ID, b.ID))
	})
	return refunds
}
