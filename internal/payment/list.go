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

package payment

import (
	"context"
	"errors"
	"time"
)

// ListKind is what a list request asks for.
type ListKind string

const (
	// KindCharges lists charges (Stripe: PaymentIntents).
	KindCharges ListKind = "charges"
	// KindRefunds lists refunds.
	KindRefunds ListKind = "refunds"
	// KindDisputes lists disputes; Listed.Charge is the disputed charge.
	KindDisputes ListKind = "disputes"
)

// MaxListPage is the most objects one page of a list holds (Stripe's
// limit=100).
const MaxListPage = 100

// ListRequest asks for one page of the objects of one kind that the
// provider created in a window.
type ListRequest struct {
	// Kind is what to list.
	Kind ListKind
	// From and To bound the window: objects created at From or later and
	// before To, by the provider's clock, to the second.
	From, To time.Time
	// After is the Next of the page before; empty for the first page.
	After string
}

// ListPage is one page of a list.
type ListPage struct {
	// Objects are at most MaxListPage objects of the window, in the
	// provider's order (Stripe: newest first). Every object of the window
	// is on exactly one page of a list that runs to its end.
	Objects []Listed
	// Next is the cursor of the next page; empty on the last one.
	Next string
}

// Listed is one charge, refund or dispute as the provider lists it.
type Listed struct {
	// ID is the provider's id (pi_..., re_..., dp_...).
	ID string
	// Key is the idempotency key the object carries in its metadata
	// (MetadataKeyIdempotencyKey); empty when it carries none, as for an
	// object made in the provider's dashboard or by another system.
	Key string
	// Status is the provider's own word for the object's state.
	Status string
	// State classifies Status as a charge's or a refund's (see
	// Refunder); for a dispute, StateSucceeded while the dispute can still
	// take the money or took it, StateNotCharged once it was won.
	State ChargeState
	// Amount in minor units.
	Amount int64
	// Currency is the ISO 4217 code, lower case.
	Currency string
	// Created is when the provider created the object.
	Created time.Time
	// Charge is a refund's or a dispute's charge: the provider's id of the
	// charge it refunds or disputes; empty for a charge.
	Charge string
}

// Lister is implemented by providers that can list what they created in a
// time window, page by page: what reconciliation compares the cluster's
// books with. A list only reads; it never charges or refunds.
//
// List returns one page. The caller pages with Next, under a rate budget
// of its own (a list of a busy month is thousands of requests, and it must
// never starve the charges). Any error means the page is unknown; the same
// request may be sent again.
//
// An adapter whose provider turns out to have no list (an HTTP service
// without a list endpoint) returns ErrListUnsupported.
type Lister interface {
	List(ctx context.Context, req ListRequest) (ListPage, error)
}

// ErrListUnsupported says a provider cannot list: a reconciliation then
// looks up the cluster's own keys instead.
var ErrListUnsupported = errors.New("the provider has no list endpoint")

// ListAll calls fn with every page of req's window at l, from the first
// (req.After is where it starts) to the last, calling wait before each
// request; wait is the caller's rate budget, such as a rate.Limiter's
// Wait. It stops at the first error of l, wait or fn.
func ListAll(ctx context.Context, l Lister, req ListRequest, wait func(context.Context) error, fn func(ListPage) error) error {
	for {
		if err := wait(ctx); err != nil {
			return err
		}
		page, err := l.List(ctx, req)
		if err != nil {
			return err
		}
		if err := fn(page); err != nil {
			return err
		}
		if page.Next == "" {
			return nil
		}
		req.After = page.Next
	}
}
