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

package paymentreconciliation

import (
	"context"
	"fmt"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/books"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// DefaultSliceObjects is about the most charges one slice of a window
// holds: a run holds one slice's objects and records at a time, whatever
// the window's size. Slices cost no request: they are cut from one list of
// the window.
const DefaultSliceObjects = 500

// stream is one list of a window, read a page at a time under the run's
// budget as its objects are taken.
type stream struct {
	r    *reader
	l    payment.Lister
	req  payment.ListRequest
	kind payment.ListKind
	buf  []payment.Listed
	done bool
	// newestFirst stays true while every object came no later than the one
	// before it.
	newestFirst bool
	last        time.Time
}

func (r *reader) stream(l payment.Lister, kind payment.ListKind, from, to time.Time) *stream {
	return &stream{r: r, l: l, kind: kind, req: payment.ListRequest{Kind: kind, From: from, To: to}, newestFirst: true}
}

// peek returns the next object, reading a page when none is left; false
// at the end of the list.
func (s *stream) peek(ctx context.Context) (payment.Listed, bool, error) {
	for len(s.buf) == 0 {
		if s.done {
			return payment.Listed{}, false, nil
		}
		if err := s.r.wait(ctx); err != nil {
			return payment.Listed{}, false, err
		}
		page, err := s.l.List(ctx, s.req)
		if err != nil {
			return payment.Listed{}, false, providerError{fmt.Errorf("cannot list the provider's %s: %w", s.kind, err)}
		}
		s.buf, s.req.After, s.done = page.Objects, page.Next, page.Next == ""
	}
	return s.buf[0], true, nil
}

// skip moves past the object peek returned.
func (s *stream) skip() {
	o := s.buf[0]
	s.buf = s.buf[1:]
	if !s.last.IsZero() && o.Created.After(s.last) {
		s.newestFirst = false
	}
	s.last = o.Created
}

// slices cuts the window's list into slices, newest first, each of about
// size charges and the refunds created in it, and hands each to fn with
// its start; the first one ends at the window's end, each later one where
// the one before started, and the last one starts at the window's start.
// A slice holds whole seconds: it ends after the first charge of an older
// second once it has size charges. A list that turns out not to be newest
// first (the HTTP contract allows any stable order) is read to its end in
// one slice.
func (r *reader) slices(ctx context.Context, l payment.Lister, from, to time.Time, size int, disputed map[string]string,
	fn func(start time.Time, objects []books.Object) error) error {
	charges := r.stream(l, payment.KindCharges, from, to)
	refunds := r.stream(l, payment.KindRefunds, from, to)
	for {
		var objects []books.Object
		start := from
		for {
			o, ok, err := charges.peek(ctx)
			if err != nil {
				return err
			}
			if !ok {
				break
			}
			second := o.Created.Truncate(time.Second)
			if len(objects) >= size && charges.newestFirst && second.Before(charges.last.Truncate(time.Second)) {
				start = charges.last.Truncate(time.Second)
				break
			}
			charges.skip()
			obj := objectOf(payment.KindCharges, o)
			obj.Dispute = disputed[o.ID]
			objects = append(objects, obj)
		}
		for {
			o, ok, err := refunds.peek(ctx)
			if err != nil {
				return err
			}
			if !ok || (refunds.newestFirst && start.After(from) && o.Created.Before(start)) {
				break
			}
			refunds.skip()
			obj := objectOf(payment.KindRefunds, o)
			r.listed(obj)
			objects = append(objects, obj)
		}
		if err := fn(start, objects); err != nil {
			return err
		}
		if !start.After(from) {
			return nil
		}
	}
}
