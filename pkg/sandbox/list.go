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

package sandbox

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Listing what the Engine holds, as Stripe's list endpoints do: the objects
// of a kind created in a window, newest first (by Created, then by ID), a
// page at a time after a cursor. Every page is read from the kind's
// createdIndex, so it costs O(log n + page) whatever the number of objects.

// Objects per page of a list when no limit is given, and at most, as at
// Stripe.
const (
	DefaultListLimit = 10
	MaxListLimit     = 100
)

// ListQuery asks for one page of a list of the Engine.
type ListQuery struct {
	// From, when not zero, keeps the objects created at its second or
	// later, as Stripe's created[gte] in Unix seconds does:
	// Created.Unix() >= From.Unix().
	From time.Time
	// To, when not zero, keeps the objects created before its second, as
	// created[lt] does: Created.Unix() < To.Unix().
	To time.Time
	// Limit is the most objects of the page, 1 to MaxListLimit; 0 is
	// DefaultListLimit.
	Limit int
	// StartingAfter is the ID of an object of the list, usually the last
	// of the previous page: the page holds the objects listed after it
	// (older ones). An ID the list does not hold is an error.
	StartingAfter string
	// EndingBefore is the ID of an object of the list: the page holds the
	// Limit objects listed just before it (newer ones), still newest first.
	// At most one of StartingAfter and EndingBefore may be set.
	EndingBefore string
	// PaymentIntent, when set, keeps the refunds or disputes of that
	// PaymentIntent; ListIntents ignores it.
	PaymentIntent string
	// after, when set, is the position of the HTTP contract's cursor: the
	// page holds the objects listed after it, whether or not the object
	// there is still in the Engine's books.
	after *indexKey
}

// ListIntents returns a page of the PaymentIntents of q's window, in every
// status, newest first, and whether more of the window follow it (has_more
// at Stripe): GET /v1/payment_intents. Errors are *StripeError, a 400
// naming the parameter: a limit out of range, both cursors, or a cursor
// that is not a PaymentIntent. Every call counts in Stats.Lists.
func (e *Engine) ListIntents(q ListQuery) ([]Intent, bool, error) {
	e.lockSettled()
	defer e.mu.Unlock()
	e.stats.Lists++
	keys, more, err := listPage(&e.intentIndex, q, objectPaymentIntent, func(id string) (indexKey, bool) {
		in, ok := e.intents[id]
		return keyOf(in.Created, id), ok
	})
	if err != nil {
		return nil, false, err
	}
	page := make([]Intent, len(keys))
	for i, k := range keys {
		page[i] = e.intents[k.id].clone()
	}
	return page, more, nil
}

// ListRefundsPage returns a page of the refunds of q's window, of every
// PaymentIntent or of q.PaymentIntent, as they are now, newest first, and
// whether more of the window follow it: GET /v1/refunds. It answers the
// errors of ListIntents, for refunds, and counts in Stats.Lists.
func (e *Engine) ListRefundsPage(q ListQuery) ([]Refund, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.stats.Lists++
	index := &e.refundIndex
	if q.PaymentIntent != "" {
		index = e.subIndex(e.refundsOf[q.PaymentIntent], func(id string) time.Time { return e.refunds[id].Created })
	}
	keys, more, err := listPage(index, q, "refund", func(id string) (indexKey, bool) {
		r, ok := e.refunds[id]
		return keyOf(r.Created, id), ok && (q.PaymentIntent == "" || r.PaymentIntent == q.PaymentIntent)
	})
	if err != nil {
		return nil, false, err
	}
	page := make([]Refund, len(keys))
	for i, k := range keys {
		page[i] = e.settleLocked(e.refunds[k.id]).clone()
	}
	return page, more, nil
}

// subIndex is an index of the few objects with ids, such as the refunds of
// one PaymentIntent. The caller holds the lock.
func (e *Engine) subIndex(ids []string, created func(id string) time.Time) *createdIndex {
	var x createdIndex
	for _, id := range ids {
		x.insert(keyOf(created(id), id))
	}
	return &x
}

// storeIntentLocked stores in as putIntentLocked does and, when it is new
// or its status changed, queues the webhook event of its status. The
// caller holds the lock.
func (e *Engine) storeIntentLocked(in Intent) {
	old, ok := e.intents[in.ID]
	e.putIntentLocked(in)
	if !ok || old.Status != in.Status {
		e.intentEventLocked(in)
	}
}

// putIntentLocked stores in, and keeps the intent index right when it
// replaces an intent created at another time. The caller holds the lock.
func (e *Engine) putIntentLocked(in Intent) {
	k := keyOf(in.Created, in.ID)
	if old, ok := e.intents[in.ID]; ok {
		if oldKey := keyOf(old.Created, old.ID); oldKey != k {
			e.intentIndex.remove(oldKey)
		}
	}
	e.intents[in.ID] = in
	e.intentIndex.insert(k)
}

// window is the range of index keys a ListQuery keeps: lo <= created < hi,
// in nanoseconds.
type window struct {
	lo, hi int64
}

// windowOf is q's window; a zero bound is no bound.
func windowOf(q ListQuery) window {
	w := window{lo: math.MinInt64, hi: math.MaxInt64}
	if !q.From.IsZero() {
		w.lo = secondsToNanos(q.From.Unix())
	}
	if !q.To.IsZero() {
		w.hi = secondsToNanos(q.To.Unix())
	}
	return w
}

// secondsToNanos converts Unix seconds to nanoseconds, saturating beyond
// the years 1678 to 2262 that nanoseconds can hold.
func secondsToNanos(s int64) int64 {
	switch {
	case s > math.MaxInt64/int64(time.Second):
		return math.MaxInt64
	case s < math.MinInt64/int64(time.Second):
		return math.MinInt64
	}
	return s * int64(time.Second)
}

// listPage returns the keys of the page of q read from x, newest first, and
// whether more of the window follow it; lookup returns the key of an object
// ID that the list may take as a cursor. object names the kind in the
// error of an unknown cursor.
func listPage(x *createdIndex, q ListQuery, object string, lookup func(id string) (indexKey, bool)) ([]indexKey, bool, *StripeError) {
	limit := q.Limit
	if limit == 0 {
		limit = DefaultListLimit
	}
	if limit < 1 || limit > MaxListLimit {
		return nil, false, invalidRequest(CodeParameterInvalid, "limit",
			fmt.Sprintf("Invalid limit: must be an integer between 1 and %d.", MaxListLimit))
	}
	if q.StartingAfter != "" && q.EndingBefore != "" {
		return nil, false, invalidRequest(CodeParameterInvalid, "ending_before",
			"You may only specify one of these parameters: starting_after, ending_before.")
	}
	w := windowOf(q)
	if q.EndingBefore != "" {
		cursor, ok := lookup(q.EndingBefore)
		if !ok {
			return nil, false, noSuchCursorError("ending_before", object, q.EndingBefore)
		}
		keys, more := pageBefore(x, w, cursor, limit)
		return keys, more, nil
	}
	from := indexKey{created: w.hi}
	if q.after != nil && q.after.compare(from) < 0 {
		from = *q.after
	}
	if q.StartingAfter != "" {
		cursor, ok := lookup(q.StartingAfter)
		if !ok {
			return nil, false, noSuchCursorError("starting_after", object, q.StartingAfter)
		}
		if cursor.compare(from) < 0 {
			from = cursor
		}
	}
	keys := make([]indexKey, 0, min(limit+1, 16))
	x.descend(from, func(k indexKey) bool {
		if k.created < w.lo {
			return false
		}
		keys = append(keys, k)
		return len(keys) <= limit
	})
	return keys[:min(limit, len(keys))], len(keys) > limit, nil
}

// pageBefore returns the limit keys of w listed just before cursor (newer
// than it), newest first, and whether newer ones of w follow them.
func pageBefore(x *createdIndex, w window, cursor indexKey, limit int) ([]indexKey, bool) {
	// An empty ID sorts before every object created at w.lo.
	from := indexKey{created: w.lo}
	if cursor.compare(from) > 0 {
		from = cursor
	}
	var keys []indexKey
	x.ascend(from, func(k indexKey) bool {
		if k.created >= w.hi {
			return false
		}
		keys = append(keys, k)
		return len(keys) <= limit
	})
	more := len(keys) > limit
	keys = keys[:min(limit, len(keys))]
	slices.Reverse(keys)
	return keys, more
}

// noSuchCursorError is the 400 of a cursor that is not an object of the
// list.
func noSuchCursorError(param, object, id string) *StripeError {
	return invalidRequest(CodeResourceMissing, param, fmt.Sprintf("No such %s: '%s'", object, id))
}
