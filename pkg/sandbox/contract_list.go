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
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// The HTTP contract's list, GET /http/list (docs/providers.md): the charges
// or the refunds created in a window, newest first, a page at a time, for
// reconciliation. It reads the same Engine lists as GET
// /v1/payment_intents and /v1/refunds, under RateLimits.Reads, and needs no
// Authorization, like the contract's other routes:
//
//	kind         charges or refunds; required
//	createdFrom  Unix seconds: objects created then or later; optional
//	createdTo    Unix seconds: objects created before then; optional
//	limit        1 to 100 objects a page; 100 when left out
//	after        the next of the previous page
//
// The answer is {"account", "data": [...], "next"}, next left out on the
// last page. The cursor is the position of the last object of the page, so
// that a list goes on when that object is deleted meanwhile.

// contractListed is an object of the list body.
type contractListed struct {
	ID             string `json:"id"`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
	Status         string `json:"status"`
	Amount         int64  `json:"amount"`
	Currency       string `json:"currency"`
	Created        int64  `json:"created"`
	// Charge is a refund's charge.
	Charge string `json:"charge,omitempty"`
	// Dispute is the dispute of a charge, if any.
	Dispute string `json:"dispute,omitempty"`
	// Method is a charge's payment method type, such as sepa_debit.
	Method string `json:"method,omitempty"`
}

// contractList is the body of GET /http/list.
type contractList struct {
	Account string           `json:"account"`
	Data    []contractListed `json:"data"`
	Next    string           `json:"next,omitempty"`
}

// listContract answers a page of the charges or refunds of the window.
func (s *server) listContract(w http.ResponseWriter, r *http.Request) {
	if err := s.engine.admitRead(); err != nil {
		writeContractError(w, stripeErrorOf(err))
		return
	}
	params := r.URL.Query()
	kind := payment.ListKind(params.Get("kind"))
	q, err := contractListQuery(kind, params)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, contractError{Reason: payment.ReasonInvalidRequest, Message: err.Error()})
		return
	}
	body := contractList{Account: s.engine.Account(), Data: []contractListed{}}
	var more bool
	var lastKey indexKey
	switch kind {
	case payment.KindCharges:
		var page []Intent
		page, more, err = s.engine.ListIntents(q)
		for _, in := range page {
			body.Data = append(body.Data, contractListed{
				ID:             in.ID,
				IdempotencyKey: in.Metadata[payment.MetadataKeyIdempotencyKey],
				Status:         contractStatus(in.Status),
				Amount:         in.Amount,
				Currency:       in.Currency,
				Created:        in.Created.Unix(),
				Dispute:        s.engine.disputeOf(in.ID),
				Method:         methodTypeOf(in),
			})
			lastKey = keyOf(in.Created, in.ID)
		}
	default:
		var page []Refund
		page, more, err = s.engine.ListRefundsPage(q)
		for _, refund := range page {
			body.Data = append(body.Data, contractListed{
				ID:             refund.ID,
				IdempotencyKey: refund.Metadata[payment.MetadataKeyIdempotencyKey],
				Status:         refund.Status,
				Amount:         refund.Amount,
				Currency:       refund.Currency,
				Created:        refund.Created.Unix(),
				Charge:         refund.PaymentIntent,
			})
			lastKey = keyOf(refund.Created, refund.ID)
		}
	}
	if err != nil {
		writeContractError(w, stripeErrorOf(err))
		return
	}
	if more {
		body.Next = encodeCursor(kind, lastKey)
	}
	writeJSON(w, http.StatusOK, body)
}

// contractListQuery reads the parameters of a list of kind.
func contractListQuery(kind payment.ListKind, params url.Values) (ListQuery, error) {
	if kind != payment.KindCharges && kind != payment.KindRefunds {
		return ListQuery{}, fmt.Errorf("invalid kind %q: use %s or %s", kind, payment.KindCharges, payment.KindRefunds)
	}
	q := ListQuery{Limit: payment.MaxListPage}
	for _, b := range []struct {
		param string
		into  *time.Time
	}{
		{"createdFrom", &q.From},
		{"createdTo", &q.To},
	} {
		if !params.Has(b.param) {
			continue
		}
		v, err := strconv.ParseInt(params.Get(b.param), 10, 64)
		if err != nil || v < 0 || v > maxUnixSeconds {
			return ListQuery{}, fmt.Errorf("invalid %s %q: use Unix seconds", b.param, params.Get(b.param))
		}
		*b.into = time.Unix(v, 0)
	}
	if params.Has("limit") {
		n, err := strconv.Atoi(params.Get("limit"))
		if err != nil || n < 1 || n > payment.MaxListPage {
			return ListQuery{}, fmt.Errorf("invalid limit %q: use 1 to %d", params.Get("limit"), payment.MaxListPage)
		}
		q.Limit = n
	}
	if after := params.Get("after"); after != "" {
		k, ok := decodeCursor(kind, after)
		if !ok {
			return ListQuery{}, fmt.Errorf("invalid after: use the next of a list of %s", kind)
		}
		q.after = &k
	}
	return q, nil
}

// encodeCursor is the opaque cursor of the position k of a list of kind.
func encodeCursor(kind payment.ListKind, k indexKey) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%s:%d:%s", kind, k.created, k.id))
}

// decodeCursor returns the position of a cursor of a list of kind, and
// false when it is not one.
func decodeCursor(kind payment.ListKind, cursor string) (indexKey, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return indexKey{}, false
	}
	parts := strings.SplitN(string(raw), ":", 3)
	if len(parts) != 3 || parts[0] != string(kind) || parts[2] == "" {
		return indexKey{}, false
	}
	created, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return indexKey{}, false
	}
	return indexKey{created: created, id: parts[2]}, true
}

// disputeOf returns the ID of the dispute of the PaymentIntent with id,
// empty when it has none.
func (e *Engine) disputeOf(intentID string) string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.disputeOfLocked(intentID)
}
