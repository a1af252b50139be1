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

package ledger

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// recordAll records n entries under prefix at once, and returns them as
// the ledger stores them (their time to the second).
func recordAll(t *testing.T, l *Ledger, prefix string, n int) map[string]Entry {
	t.Helper()
	g := NewWithT(t)
	at := time.Now()
	want := make(map[string]Entry, n)
	var wg sync.WaitGroup
	for i := range n {
		e := entry(prefix, i, at)
		wg.Go(func() { g.Expect(l.Record(t.Context(), e)).To(Succeed()) })
		stored := e
		stored.At = at.UTC().Truncate(time.Second)
		want[e.Key] = stored
	}
	wg.Wait()
	return want
}

// listing is a reader that records the options of each List request, and
// may answer one of them with an error of its own.
type listing struct {
	mu    sync.Mutex
	lists []client.ListOptions
	// fail, when set, answers the List request with these options instead
	// of the API server, once.
	fail func(client.ListOptions) error
}

func (r *listing) reader(t *testing.T) client.Reader {
	t.Helper()
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return interceptor.NewClient(c, interceptor.Funcs{
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			var o client.ListOptions
			o.ApplyOptions(opts)
			r.mu.Lock()
			r.lists = append(r.lists, o)
			fail := r.fail
			r.mu.Unlock()
			if fail != nil {
				if err := fail(o); err != nil {
					r.mu.Lock()
					r.fail = nil
					r.mu.Unlock()
					return err
				}
			}
			return c.List(ctx, list, opts...)
		},
	})
}

// inUTC is entries with their times in UTC, which the API server's answer
// gives in the local time zone.
func inUTC(entries map[string]Entry) map[string]Entry {
	for k, e := range entries {
		e.At = e.At.UTC()
		entries[k] = e
	}
	return entries
}

// readPrefix reads every entry through reader and returns those under
// prefix, failing on one read twice.
func readPrefix(t *testing.T, reader client.Reader, prefix string) map[string]Entry {
	t.Helper()
	got := map[string]Entry{}
	err := ReadAll(t.Context(), reader, func(e Entry) error {
		if !strings.HasPrefix(e.Key, prefix+"/") {
			return nil
		}
		if _, twice := got[e.Key]; twice {
			return fmt.Errorf("%s read twice", e.Key)
		}
		e.At = e.At.UTC()
		got[e.Key] = e
		return nil
	})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return got
}

func TestReadAllReadsEveryEntryAFewPagesARequest(t *testing.T) {
	g := NewWithT(t)
	l, _ := start(t, Options{MaxEntriesPerPage: 10})
	prefix := unique("readall")
	want := recordAll(t, l, prefix, 250)

	var r listing
	g.Expect(readPrefix(t, r.reader(t), prefix)).To(Equal(want), "every entry once, every field as recorded")

	pages := len(pagesOf(t))
	g.Expect(pages).To(BeNumerically(">=", 25))
	g.Expect(r.lists).To(HaveLen((pages+pageListLimit-1)/pageListLimit), "one request per %d pages", pageListLimit)
	for _, o := range r.lists {
		g.Expect(o.Limit).To(BeEquivalentTo(pageListLimit), "memory holds a few pages, whatever the ledger's size")
	}
}

func TestReadAllGoesOnAfterItsListExpired(t *testing.T) {
	g := NewWithT(t)
	l, _ := start(t, Options{MaxEntriesPerPage: 10})
	prefix := unique("expired")
	want := recordAll(t, l, prefix, 150)

	// The second request is answered as the API server answers a continue
	// token whose version was compacted: 410 and a token to go on with.
	var expired atomic.Bool
	r := listing{fail: func(o client.ListOptions) error {
		if o.Continue == "" {
			return nil
		}
		expired.Store(true)
		err := apierrors.NewResourceExpired("The provided continue parameter is too old to display a consistent list result.")
		err.ErrStatus.Continue = o.Continue
		return err
	}}
	g.Expect(readPrefix(t, r.reader(t), prefix)).To(Equal(want))
	g.Expect(expired.Load()).To(BeTrue(), "the list did expire")
}

func TestReadAllStopsAtAnErrorOfItsCaller(t *testing.T) {
	g := NewWithT(t)
	l, _ := start(t, Options{MaxEntriesPerPage: 10})
	recordAll(t, l, unique("stop"), 30)

	stop := errors.New("enough")
	calls := 0
	var r listing
	err := ReadAll(t.Context(), r.reader(t), func(Entry) error {
		calls++
		if calls == 5 {
			return stop
		}
		return nil
	})
	g.Expect(err).To(MatchError(stop))
	g.Expect(calls).To(Equal(5))
	g.Expect(r.lists).To(HaveLen(1))
}

func TestFindAllReadsEachPageOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	writer, _ := start(t, Options{MaxEntriesPerPage: 10})
	prefix := unique("findall")
	want := recordAll(t, writer, prefix, 40)

	l, n := start(t, Options{MaxEntriesPerPage: 10})
	keys := make([]string, 0, 1002)
	keys = append(keys, entry(prefix, 3, time.Time{}).Key, entry(prefix, 27, time.Time{}).Key)
	for i := range 1000 {
		keys = append(keys, fmt.Sprintf("%s/absent-%d", prefix, i))
	}
	// Pages earlier tests left unfinished are read once, when first asked.
	_, err := l.FindAll(ctx, []string{prefix + "/warm-up"})
	g.Expect(err).NotTo(HaveOccurred())
	before := n.reads.Load()
	found, err := l.FindAll(ctx, keys)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inUTC(found)).To(Equal(map[string]Entry{keys[0]: want[keys[0]], keys[1]: want[keys[1]]}))
	reads := n.reads.Load() - before
	g.Expect(reads).To(BeNumerically("<=", 2), "a page per key found at most; absent keys cost no request")

	all := make([]string, 0, len(want))
	for k := range want {
		all = append(all, k)
	}
	before = n.reads.Load()
	found, err = l.FindAll(ctx, all)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(inUTC(found)).To(Equal(want))
	g.Expect(n.reads.Load()-before).To(BeNumerically("<=", 40/10+2), "each page holding a key is read once")
	for _, key := range keys[:2] {
		e, ok, err := l.Find(ctx, key)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ok).To(BeTrue())
		e.At = e.At.UTC()
		g.Expect(found[key]).To(Equal(e), "FindAll answers as Find does")
	}
}
