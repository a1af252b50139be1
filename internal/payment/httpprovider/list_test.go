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

package httpprovider_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/httpprovider"
)

const listPath = "/v1/list"

// listFrom and listTo are the window of the list tests.
var (
	listFrom = time.Unix(createdEpoch-3600, 0)
	listTo   = time.Unix(createdEpoch+3600, 0)
)

// lister is a Provider of a service on srv whose list endpoint is
// srv's listPath with the parameters query ("" for none).
func lister(t *testing.T, url, query string) payment.Lister {
	t.Helper()
	listURL := url + listPath
	if query != "" {
		listURL += "?" + query
	}
	p, err := httpprovider.New(httpprovider.Config{URL: url + chargePath, ListURL: listURL, Token: testToken})
	if err != nil {
		t.Fatalf("cannot create provider: %v", err)
	}
	return p.(payment.Lister)
}

// listWindow is a request for kind in the test window after after.
func listWindow(kind payment.ListKind, after string) payment.ListRequest {
	return payment.ListRequest{Kind: kind, From: listFrom, To: listTo, After: after}
}

func TestListSendsOneGETOfTheContract(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		kind      payment.ListKind
		after     string
		urlQuery  string
		wantQuery string
	}{
		{name: "charges", kind: payment.KindCharges,
			wantQuery: "kind=charges&createdFrom=1772364600&createdTo=1772371800&limit=100"},
		{name: "refunds after a cursor", kind: payment.KindRefunds, after: "cur/2+x",
			wantQuery: "kind=refunds&createdFrom=1772364600&createdTo=1772371800&limit=100&after=cur%2F2%2Bx"},
		{name: "disputes are the charges' list", kind: payment.KindDisputes,
			wantQuery: "kind=charges&createdFrom=1772364600&createdTo=1772371800&limit=100"},
		{name: "after the url's own parameters", kind: payment.KindCharges, urlQuery: "account=a1",
			wantQuery: "account=a1&kind=charges&createdFrom=1772364600&createdTo=1772371800&limit=100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			var rawQuery string
			srv, requests := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				rawQuery = r.URL.RawQuery
				answer(http.StatusOK, nil, `{"data":[]}`)(w, r)
			})

			page, err := lister(t, srv.URL, tt.urlQuery).List(context.Background(), listWindow(tt.kind, tt.after))

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(page.Objects).To(BeEmpty())
			g.Expect(page.Next).To(BeEmpty())
			got := drain(requests)
			g.Expect(got).To(HaveLen(1))
			g.Expect(got[0].method).To(Equal(http.MethodGet))
			g.Expect(got[0].path).To(Equal(listPath))
			g.Expect(rawQuery).To(Equal(tt.wantQuery))
			g.Expect(got[0].body).To(BeEmpty())
			g.Expect(got[0].header.Get("Accept")).To(Equal("application/json"))
			g.Expect(got[0].header.Get("User-Agent")).To(Equal(httpprovider.UserAgent))
			g.Expect(got[0].header.Get("Authorization")).To(Equal("Bearer " + testToken))
			g.Expect(got[0].header.Values("Idempotency-Key")).To(BeEmpty(), "a list is a read: no Idempotency-Key")
		})
	}
}

func TestListMapsTheAnswer(t *testing.T) {
	t.Parallel()
	created := time.Unix(createdEpoch, 0).UTC()
	body := `{"account":"acct_42","data":[
		{"id":"ch_1","idempotencyKey":"` + testKey + `","status":"succeeded","amount":2000,"currency":"USD","created":1772368200,"dispute":"dp_1"},
		{"id":"ch_2","status":" Declined ","amount":1500,"currency":"eur","created":"2026-03-01T12:50:00Z"},
		{"id":"ch_3","status":"processing","amount":0,"currency":"eur","created":1772368200,"charge":"ignored for a charge"},
		{"id":"re_1","idempotencyKey":"refund/1","status":"paid","amount":500,"currency":"eur","created":1772368200,"charge":"ch_1"}
	],"next":"cur_2"}`
	tests := []struct {
		kind payment.ListKind
		want []payment.Listed
	}{
		{kind: payment.KindCharges, want: []payment.Listed{
			{ID: "ch_1", Key: testKey, Status: "succeeded", State: payment.StateSucceeded, Amount: 2000, Currency: "usd", Created: created},
			{ID: "ch_2", Status: " Declined ", State: payment.StateNotCharged, Amount: 1500, Currency: "eur", Created: created.Add(20 * time.Minute)},
			{ID: "ch_3", Status: "processing", State: payment.StatePending, Amount: 0, Currency: "eur", Created: created},
			{ID: "re_1", Key: "refund/1", Status: "paid", State: payment.StateSucceeded, Amount: 500, Currency: "eur", Created: created},
		}},
		{kind: payment.KindRefunds, want: []payment.Listed{
			{ID: "ch_1", Key: testKey, Status: "succeeded", State: payment.StateSucceeded, Amount: 2000, Currency: "usd", Created: created},
			{ID: "ch_2", Status: " Declined ", State: payment.StateNotCharged, Amount: 1500, Currency: "eur", Created: created.Add(20 * time.Minute)},
			{ID: "ch_3", Status: "processing", State: payment.StatePending, Amount: 0, Currency: "eur", Created: created, Charge: "ignored for a charge"},
			{ID: "re_1", Key: "refund/1", Status: "paid", State: payment.StateSucceeded, Amount: 500, Currency: "eur", Created: created, Charge: "ch_1"},
		}},
		{kind: payment.KindDisputes, want: []payment.Listed{
			{ID: "dp_1", Status: "disputed", State: payment.StateSucceeded, Amount: 2000, Currency: "usd", Created: created, Charge: "ch_1"},
		}},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			srv, _ := newServer(t, answer(http.StatusOK, nil, body))

			page, err := lister(t, srv.URL, "").List(context.Background(), listWindow(tt.kind, ""))

			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(page.Objects).To(Equal(tt.want))
			g.Expect(page.Next).To(Equal("cur_2"))
		})
	}
}

func TestListWalksEveryPage(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	srv, requests := newServer(t, sequence(
		`{"data":[{"id":"ch_3","status":"succeeded","amount":1,"currency":"eur"}],"next":"c1"}`,
		`{"data":[{"id":"ch_2","status":"succeeded","amount":1,"currency":"eur"}],"next":"c2"}`,
		`{"data":[{"id":"ch_1","status":"succeeded","amount":1,"currency":"eur"}]}`,
	))
	var got []string
	waits := 0

	err := payment.ListAll(context.Background(), lister(t, srv.URL, ""), listWindow(payment.KindCharges, ""),
		func(context.Context) error { waits++; return nil },
		func(page payment.ListPage) error {
			for _, o := range page.Objects {
				got = append(got, o.ID)
			}
			return nil
		})

	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal([]string{"ch_3", "ch_2", "ch_1"}))
	g.Expect(waits).To(Equal(3), "one wait of the caller's budget per request")
	sent := drain(requests)
	afters := make([]string, 0, len(sent))
	for _, r := range sent {
		afters = append(afters, r.query.Get("after"))
	}
	g.Expect(afters).To(Equal([]string{"", "c1", "c2"}))
}

func TestListWithoutAListURLIsUnsupported(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	srv, requests := newServer(t, answer(http.StatusOK, nil, `{"data":[]}`))
	p, err := httpprovider.New(httpprovider.Config{URL: srv.URL + chargePath, LookupURL: srv.URL + lookupPath})
	g.Expect(err).NotTo(HaveOccurred())

	_, err = p.(payment.Lister).List(context.Background(), listWindow(payment.KindCharges, ""))

	g.Expect(err).To(MatchError(payment.ErrListUnsupported))
	g.Expect(drain(requests)).To(BeEmpty())
}

func TestNewRefusesAListURLWithTheOperatorsParameters(t *testing.T) {
	t.Parallel()
	for _, param := range []string{"kind", "createdFrom", "createdTo", "limit", "after"} {
		t.Run(param, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			_, err := httpprovider.New(httpprovider.Config{URL: "http://127.0.0.1/charges",
				ListURL: "http://127.0.0.1/list?" + param + "=1"})
			g.Expect(err).To(MatchError(ContainSubstring("list url: it must not have a %q parameter", param)))
		})
	}
	g := NewWithT(t)
	_, err := httpprovider.New(httpprovider.Config{URL: "http://127.0.0.1/charges", ListURL: "ftp://127.0.0.1/list"})
	g.Expect(err).To(MatchError(ContainSubstring("list url")))
}

func TestListErrorsAreUncertain(t *testing.T) {
	t.Parallel()
	item := func(fields string) string { return `{"data":[{` + fields + `}]}` }
	tests := []struct {
		name           string
		respond        http.HandlerFunc
		after          string
		wantMessage    string
		wantRetryAfter time.Duration
	}{
		{name: "401", respond: answer(http.StatusUnauthorized, nil, `{"message":"bad token"}`),
			wantMessage: "list endpoint answered 401 Unauthorized: check the PaymentProvider's secret"},
		{name: "403", respond: answer(http.StatusForbidden, nil, ""), wantMessage: "may list charges and refunds"},
		{name: "404", respond: answer(http.StatusNotFound, nil, ""), wantMessage: "check the PaymentProvider's list url (spec.http.listURL)"},
		{name: "302", respond: answer(http.StatusFound, map[string]string{"Location": "/elsewhere"}, ""),
			wantMessage: "set the PaymentProvider's list url (spec.http.listURL) to the list endpoint itself"},
		{name: "400", respond: answer(http.StatusBadRequest, nil, `{"reason":"InvalidRequest","message":"bad createdFrom"}`),
			wantMessage: "the contract answers a list with 200 only"},
		{name: "429", respond: answer(http.StatusTooManyRequests, map[string]string{"Retry-After": "9"}, ""),
			wantMessage: "list endpoint answered 429", wantRetryAfter: 9 * time.Second},
		{name: "503", respond: answer(http.StatusServiceUnavailable, map[string]string{"Retry-After": "2"}, `{"message":"db down"}`),
			wantMessage: "the service said: db down", wantRetryAfter: 2 * time.Second},
		{name: "not JSON", respond: answer(http.StatusOK, map[string]string{"Content-Type": "text/html"}, "<html>login</html>"),
			wantMessage: "not a JSON object"},
		{name: "malformed JSON", respond: answer(http.StatusOK, nil, `{"data":{}}`), wantMessage: "not the expected JSON object"},
		{name: "no data array", respond: answer(http.StatusOK, nil, `{"charges":[]}`), wantMessage: "without a data array"},
		{name: "an item without an id", respond: answer(http.StatusOK, nil, item(`"status":"succeeded","amount":1,"currency":"eur"`)),
			wantMessage: "without an id"},
		{name: "an item without an amount", respond: answer(http.StatusOK, nil, item(`"id":"ch_1","currency":"eur"`)),
			wantMessage: "ch_1, without an amount or a currency"},
		{name: "an item without a currency", respond: answer(http.StatusOK, nil, item(`"id":"ch_1","amount":1,"currency":" "`)),
			wantMessage: "without an amount or a currency"},
		{name: "a malformed created", respond: answer(http.StatusOK, nil, item(`"id":"ch_1","amount":1,"currency":"eur","created":"yesterday"`)),
			wantMessage: "created is neither"},
		{name: "more than 100 items", respond: answer(http.StatusOK, nil,
			`{"data":[`+strings.TrimSuffix(strings.Repeat(`{"id":"ch_1","amount":1,"currency":"eur"},`, 101), ",")+`]}`),
			wantMessage: "101 charges on one page"},
		{name: "the same cursor again", after: "c1", respond: answer(http.StatusOK, nil, `{"data":[],"next":"c1"}`),
			wantMessage: "the list would never end"},
		{name: "a cursor that cannot be sent back", respond: answer(http.StatusOK, nil, `{"data":[],"next":"two words"}`),
			wantMessage: "a next cursor that cannot be sent back"},
		{name: "a body over 1 MiB", respond: huge(`{"data":[],`), wantMessage: "larger than 1048576 bytes"},
		{name: "connection closed", respond: hangUp(""), wantMessage: "cannot reach the payment service's list endpoint"},
		{name: "the token echoed", respond: echoToken(http.StatusInternalServerError, jsonType, `{"message":"no TOKEN"}`),
			wantMessage: "list endpoint answered 500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			srv, requests := newServer(t, tt.respond)

			page, err := lister(t, srv.URL, "").List(context.Background(), listWindow(payment.KindCharges, tt.after))

			g.Expect(page).To(BeZero())
			expectTransient(g, err)
			expectNoToken(g, err)
			g.Expect(errors.Is(err, payment.ErrListUnsupported)).To(BeFalse())
			g.Expect(err.Error()).To(ContainSubstring(tt.wantMessage))
			g.Expect(payment.RetryAfter(err)).To(Equal(tt.wantRetryAfter))
			g.Expect(drain(requests)).To(HaveLen(1), "one request per List: the caller owns the retries")
		})
	}
}

func TestListSendsNothingForARequestItCannotSend(t *testing.T) {
	t.Parallel()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name string
		ctx  context.Context
		req  payment.ListRequest
	}{
		{name: "unknown kind", ctx: context.Background(), req: payment.ListRequest{Kind: "payouts", From: listFrom, To: listTo}},
		{name: "no window", ctx: context.Background(), req: payment.ListRequest{Kind: payment.KindCharges}},
		{name: "a cursor with a line break", ctx: context.Background(), req: listWindow(payment.KindCharges, "c\n1")},
		{name: "context done", ctx: canceled, req: listWindow(payment.KindCharges, "")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			srv, requests := newServer(t, answer(http.StatusOK, nil, `{"data":[]}`))

			_, err := lister(t, srv.URL, "").List(tt.ctx, tt.req)

			g.Expect(err).To(HaveOccurred())
			g.Expect(drain(requests)).To(BeEmpty())
		})
	}
}
