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

package sandbox_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// listStart is the instant the list tests put their objects after.
var listStart = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// putIntents puts n succeeded intents of 1000 eur, in a random order, n/3
// a second from listStart, some within the same second, and returns them
// newest first.
func putIntents(g *WithT, e *sandbox.Engine, n int) []sandbox.Intent {
	order := rand.New(rand.NewPCG(1, 2)).Perm(n)
	put := make([]sandbox.Intent, 0, n)
	for _, i := range order {
		put = append(put, e.PutIntent(sandbox.Intent{
			Amount:   1000,
			Currency: "eur",
			Created:  listStart.Add(time.Duration(i) * time.Second / 3),
		}))
	}
	g.Expect(put).To(HaveLen(n))
	slices.SortFunc(put, newestFirst)
	return put
}

// newestFirst orders intents as the lists do.
func newestFirst(a, b sandbox.Intent) int {
	if c := b.Created.Compare(a.Created); c != 0 {
		return c
	}
	return strings.Compare(b.ID, a.ID)
}

// listAll pages through the intents of q with StartingAfter, and returns
// them and the number of pages.
func listAll(g *WithT, e *sandbox.Engine, q sandbox.ListQuery) ([]sandbox.Intent, int) {
	var all []sandbox.Intent
	for pages := 1; ; pages++ {
		page, more, err := e.ListIntents(q)
		g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
		all = append(all, page...)
		if !more {
			return all, pages
		}
		g.ExpectWithOffset(1, page).NotTo(BeEmpty())
		q.StartingAfter = page[len(page)-1].ID
	}
}

func TestListIntentsPagesEveryIntentOnce(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	want := putIntents(g, e, 1050)

	got, pages := listAll(g, e, sandbox.ListQuery{Limit: sandbox.MaxListLimit})
	g.Expect(pages).To(Equal(11))
	g.Expect(ids(got)).To(Equal(ids(want)), "every intent once, newest first")

	// Without a limit, a page holds Stripe's default of 10.
	page, more, err := e.ListIntents(sandbox.ListQuery{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ids(page)).To(Equal(ids(want[:sandbox.DefaultListLimit])))
	g.Expect(more).To(BeTrue())

	// ending_before pages back towards the newest.
	page, more, err = e.ListIntents(sandbox.ListQuery{Limit: 3, EndingBefore: want[10].ID})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ids(page)).To(Equal(ids(want[7:10])))
	g.Expect(more).To(BeTrue())
	page, more, err = e.ListIntents(sandbox.ListQuery{Limit: 3, EndingBefore: want[2].ID})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ids(page)).To(Equal(ids(want[:2])))
	g.Expect(more).To(BeFalse())
	g.Expect(e.Stats().Lists).To(BeEquivalentTo(pages + 3))
}

func TestListIntentsWindow(t *testing.T) {
	t.Parallel()
	at := func(d time.Duration) time.Time { return listStart.Add(d) }
	tests := []struct {
		name     string
		from, to time.Time
		// want are the offsets from listStart listed, newest first.
		want []time.Duration
	}{
		{name: "everything", want: []time.Duration{3 * time.Second, 2 * time.Second, 1500 * time.Millisecond, time.Second, 0}},
		{name: "from inclusive, to exclusive", from: at(time.Second), to: at(2 * time.Second),
			want: []time.Duration{1500 * time.Millisecond, time.Second}},
		{name: "bounds are whole seconds", from: at(1500 * time.Millisecond), to: at(2900 * time.Millisecond),
			want: []time.Duration{1500 * time.Millisecond, time.Second}},
		{name: "from only", from: at(2 * time.Second), want: []time.Duration{3 * time.Second, 2 * time.Second}},
		{name: "to only", to: at(time.Second), want: []time.Duration{0}},
		{name: "empty", from: at(2 * time.Second), to: at(2 * time.Second)},
		{name: "inverted", from: at(3 * time.Second), to: at(time.Second)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			e := sandbox.NewEngine()
			byOffset := map[time.Duration]string{}
			for _, d := range []time.Duration{time.Second, 0, 3 * time.Second, 2 * time.Second, 1500 * time.Millisecond} {
				byOffset[d] = e.PutIntent(sandbox.Intent{Amount: 100, Currency: "eur", Created: at(d)}).ID
			}
			want := []string{}
			for _, d := range tt.want {
				want = append(want, byOffset[d])
			}
			got, _ := listAll(g, e, sandbox.ListQuery{From: tt.from, To: tt.to, Limit: 2})
			g.Expect(append([]string{}, ids(got)...)).To(Equal(want))
		})
	}
}

func TestListIntentsRefusesBadQueries(t *testing.T) {
	t.Parallel()
	e := sandbox.NewEngine()
	in := e.PutIntent(sandbox.Intent{Amount: 100, Currency: "eur"})
	tests := []struct {
		name      string
		q         sandbox.ListQuery
		wantParam string
		wantCode  string
	}{
		{name: "limit too large", q: sandbox.ListQuery{Limit: 101}, wantParam: "limit", wantCode: sandbox.CodeParameterInvalid},
		{name: "negative limit", q: sandbox.ListQuery{Limit: -1}, wantParam: "limit", wantCode: sandbox.CodeParameterInvalid},
		{name: "unknown starting_after", q: sandbox.ListQuery{StartingAfter: "pi_missing"},
			wantParam: "starting_after", wantCode: sandbox.CodeResourceMissing},
		{name: "unknown ending_before", q: sandbox.ListQuery{EndingBefore: "pi_missing"},
			wantParam: "ending_before", wantCode: sandbox.CodeResourceMissing},
		{name: "both cursors", q: sandbox.ListQuery{StartingAfter: in.ID, EndingBefore: in.ID},
			wantParam: "ending_before", wantCode: sandbox.CodeParameterInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := NewWithT(t)
			_, _, err := e.ListIntents(tt.q)
			se := stripeError(g, err)
			g.Expect(se.HTTPStatus).To(Equal(http.StatusBadRequest))
			g.Expect(se.Type).To(Equal(sandbox.ErrorTypeInvalidRequest))
			g.Expect(se.Param).To(Equal(tt.wantParam))
			g.Expect(se.Code).To(Equal(tt.wantCode))
		})
	}
}

func TestPutIntentReplaceAndDeleteKeepTheListRight(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	want := putIntents(g, e, 300)

	// The oldest intent, replaced with a new amount and made the newest.
	moved := want[len(want)-1]
	moved.Amount = 1234
	moved.Created = listStart.Add(time.Hour)
	g.Expect(e.PutIntent(moved).Amount).To(BeEquivalentTo(1234))
	// Another changed in place, its creation kept.
	same := want[100]
	same.Status = sandbox.StatusProcessing
	e.PutIntent(same)
	// One lost by the provider.
	g.Expect(e.DeleteIntent(want[5].ID)).To(Succeed())
	g.Expect(e.DeleteIntent(want[5].ID)).To(MatchError(ContainSubstring("no such payment intent")))
	_, ok := e.GetPaymentIntent(want[5].ID)
	g.Expect(ok).To(BeFalse())

	got, _ := listAll(g, e, sandbox.ListQuery{Limit: 100})
	wantIDs := append([]string{moved.ID}, ids(want[:len(want)-1])...)
	wantIDs = slices.DeleteFunc(wantIDs, func(id string) bool { return id == want[5].ID })
	g.Expect(ids(got)).To(Equal(wantIDs))
	g.Expect(got[0].Amount).To(BeEquivalentTo(1234))
	g.Expect(got[slices.IndexFunc(got, func(in sandbox.Intent) bool { return in.ID == same.ID })].Status).
		To(Equal(sandbox.StatusProcessing))

	// A deleted cursor is unknown.
	_, _, err := e.ListIntents(sandbox.ListQuery{StartingAfter: want[5].ID})
	g.Expect(stripeError(g, err).Param).To(Equal("starting_after"))
}

func TestListRefundsPage(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	clock := newFakeClock()
	e := sandbox.NewEngine(sandbox.WithClock(clock.Now))
	a := charged(g, e, "a", 10000)
	b := charged(g, e, "b", 10000)
	made := make([]string, 0, 25)
	for i := range 25 {
		in := a
		if i%5 == 0 {
			in = b
		}
		r, _, err := e.CreateRefund(fmt.Sprint("refund-", i), refundOf(in, 100))
		g.Expect(err).NotTo(HaveOccurred())
		made = append(made, r.ID)
		clock.Add(400 * time.Millisecond)
	}
	slices.Reverse(made)

	var got []string
	q := sandbox.ListQuery{Limit: 7}
	for {
		page, more, err := e.ListRefundsPage(q)
		g.Expect(err).NotTo(HaveOccurred())
		for _, r := range page {
			got = append(got, r.ID)
		}
		if !more {
			break
		}
		q.StartingAfter = page[len(page)-1].ID
	}
	g.Expect(got).To(Equal(made))

	// The refunds of b, in the window of the first four seconds: refunds
	// 0, 5 at 0s and 2s; 10 at 4s is out.
	page, more, err := e.ListRefundsPage(sandbox.ListQuery{PaymentIntent: b.ID, From: clock.Now().Add(-time.Hour),
		To: newFakeClock().Now().Add(4 * time.Second)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(more).To(BeFalse())
	g.Expect(page).To(HaveLen(2))
	g.Expect([]string{page[0].ID, page[1].ID}).To(Equal([]string{made[24-5], made[24]}))
	// A refund of a is not a cursor of b's list.
	_, _, err = e.ListRefundsPage(sandbox.ListQuery{PaymentIntent: b.ID, StartingAfter: made[0]})
	g.Expect(stripeError(g, err).Param).To(Equal("starting_after"))
}

// BenchmarkListIntents pages through 100,000 intents, 100 a page: one
// iteration is the 1,000 requests of a whole list, each O(log n + page).
func BenchmarkListIntents(b *testing.B) {
	g := NewWithT(b)
	e := sandbox.NewEngine()
	const n = 100_000
	putIntents(g, e, n)
	b.ResetTimer()
	for b.Loop() {
		got, pages := listAll(g, e, sandbox.ListQuery{Limit: sandbox.MaxListLimit})
		if len(got) != n || pages != n/sandbox.MaxListLimit {
			b.Fatalf("listed %d intents in %d pages, want %d in %d", len(got), pages, n, n/sandbox.MaxListLimit)
		}
	}
}

// TestListFollowsRandomPutsAndDeletes checks the list against a model
// after puts, replaces and deletes in a random order, enough of them to
// split blocks of the index and to empty some.
func TestListFollowsRandomPutsAndDeletes(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	e := sandbox.NewEngine()
	rnd := rand.New(rand.NewPCG(3, 4))
	model := map[string]sandbox.Intent{}
	var known []string
	for range 6000 {
		created := listStart.Add(time.Duration(rnd.IntN(50)) * time.Second)
		switch op := rnd.IntN(10); {
		case op < 6 || len(known) == 0:
			in := e.PutIntent(sandbox.Intent{Amount: 100, Currency: "eur", Created: created})
			model[in.ID] = in
			known = append(known, in.ID)
		case op < 8:
			in := model[known[rnd.IntN(len(known))]]
			if in.ID == "" {
				continue
			}
			in.Created = created
			model[in.ID] = e.PutIntent(in)
		default:
			id := known[rnd.IntN(len(known))]
			if _, ok := model[id]; ok {
				g.Expect(e.DeleteIntent(id)).To(Succeed())
				delete(model, id)
			}
		}
	}
	want := make([]sandbox.Intent, 0, len(model))
	for _, in := range model {
		want = append(want, in)
	}
	slices.SortFunc(want, newestFirst)
	got, _ := listAll(g, e, sandbox.ListQuery{Limit: 37})
	g.Expect(ids(got)).To(Equal(ids(want)))

	// Deleting every other, then the rest, empties blocks.
	for i, in := range want {
		if i%2 == 0 {
			g.Expect(e.DeleteIntent(in.ID)).To(Succeed())
		}
	}
	got, _ = listAll(g, e, sandbox.ListQuery{Limit: 100})
	g.Expect(got).To(HaveLen(len(want) / 2))
	for _, in := range got {
		g.Expect(e.DeleteIntent(in.ID)).To(Succeed())
	}
	got, _ = listAll(g, e, sandbox.ListQuery{})
	g.Expect(got).To(BeEmpty())
}
