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
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// An etcd restored from a snapshot without --bump-revision, with the
// manager left running: the pages go back to what they held at the
// snapshot, and their resourceVersions go back below the ones the manager
// has seen. The API server of these tests cannot go back, so the ledger
// reads it through a client that adds an offset to every version until the
// "restore", which rewrites the pages as the snapshot had them and drops
// the offset.

// rewinding is a client whose resourceVersions go backwards when rewind is
// called.
type rewinding struct {
	client.WithWatch
	offset atomic.Int64
}

func newRewinding(t *testing.T) *rewinding {
	t.Helper()
	r := &rewinding{}
	r.offset.Store(1 << 40)
	c, err := client.NewWithWatch(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	r.WithWatch = interceptor.NewClient(c, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			err := c.Get(ctx, key, obj, opts...)
			r.shift(obj)
			return err
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			err := c.List(ctx, list, opts...)
			switch l := list.(type) {
			case *paymentsv1alpha1.PaymentLedgerList:
				for i := range l.Items {
					r.shift(&l.Items[i])
				}
			case *metav1.PartialObjectMetadataList:
				for i := range l.Items {
					r.shift(&l.Items[i])
				}
			}
			return err
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			err := c.Create(ctx, obj, opts...)
			r.shift(obj)
			return err
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			r.unshift(obj)
			err := c.Update(ctx, obj, opts...)
			r.shift(obj)
			return err
		},
	})
	return r
}

// shift and unshift translate a version between the API server and what
// the ledger sees.
func (r *rewinding) shift(obj client.Object) { r.add(obj, r.offset.Load()) }
func (r *rewinding) unshift(obj client.Object) {
	r.add(obj, -r.offset.Load())
}

func (r *rewinding) add(obj client.Object, d int64) {
	if n, err := strconv.ParseInt(obj.GetResourceVersion(), 10, 64); err == nil && n+d > 0 {
		obj.SetResourceVersion(strconv.FormatInt(n+d, 10))
	}
}

// pagesSnapshot is the pages as a snapshot holds them.
type pagesSnapshot map[string]paymentsv1alpha1.PaymentLedger

func snapshotPages(t *testing.T) pagesSnapshot {
	t.Helper()
	s := pagesSnapshot{}
	for _, p := range pagesOf(t) {
		s[p.Name] = p
	}
	return s
}

// restore writes the pages back as snapshot holds them, deletes the pages
// created since, and drops the offset of r: from now on the ledger sees
// versions lower than before, as after an etcd restore.
func (s pagesSnapshot) restore(t *testing.T, r *rewinding) {
	t.Helper()
	ctx := context.Background()
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pagesOf(t) {
		old, ok := s[p.Name]
		if !ok {
			if err := c.Delete(ctx, &p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		p.Summary, p.Providers, p.Entries = old.Summary, old.Providers, old.Entries
		if err := c.Update(ctx, &p); err != nil {
			t.Fatal(err)
		}
	}
	r.offset.Store(0)
}

// restoreScenario records outcomes before a snapshot and after it, and
// restores the snapshot: the outcomes after it are lost from the pages.
type restoreScenario struct {
	l            *Ledger
	c            *rewinding
	prefix       string
	before, lost []Entry
	// rewinds counts the calls of Options.OnRewind.
	rewinds atomic.Int32
}

const restoreJobs = 12

func newRestoreScenario(t *testing.T, name string) *restoreScenario {
	t.Helper()
	ctx := context.Background()
	c := newRewinding(t)
	// Small pages: the outcomes after the snapshot fill pages the
	// snapshot does not have, and the restore deletes them.
	s := &restoreScenario{c: c, prefix: unique(name)}
	l := New(c, c, Options{MaxEntriesPerPage: 5, OnRewind: func(...any) { s.rewinds.Add(1) }})
	s.l = l
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = l.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, "the ledger to load", func() bool { return l.Loaded() == nil })

	for i := range restoreJobs {
		s.before = append(s.before, entry(s.prefix, i, time.Now()))
		s.lost = append(s.lost, entry(s.prefix, restoreJobs+i, time.Now()))
	}
	for _, e := range s.before {
		if err := l.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	snapshot := snapshotPages(t)
	for _, e := range s.lost {
		if err := l.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	// The watch reported every page as it now is.
	for _, p := range pagesOf(t) {
		c.shift(&p)
		l.Observe(p.Name, p.ResourceVersion)
	}
	for _, e := range s.lost {
		if !l.has(e.Key) {
			t.Fatalf("%s is not indexed before the restore", e.Key)
		}
	}
	if n := s.rewinds.Load(); n != 0 {
		t.Fatalf("%d rewinds reported before the restore", n)
	}
	snapshot.restore(t, c)
	return s
}

// relist feeds Observe what a watch relisting the restored etcd reports:
// every page at its restored version, and the pages the restore deleted.
func (s *restoreScenario) relist(t *testing.T) {
	t.Helper()
	now := map[string]bool{}
	for _, p := range pagesOf(t) {
		now[p.Name] = true
		s.l.Observe(p.Name, p.ResourceVersion)
	}
	s.l.mu.Lock()
	var gone []string
	for name := range s.l.pages {
		if !now[name] {
			gone = append(gone, name)
		}
	}
	s.l.mu.Unlock()
	for _, name := range gone {
		s.l.Observe(name, "")
	}
}

// Outcomes lost by the restore are recorded again exactly once, entries
// written after it are found, and Has never says true from the index of
// before the restore.
func TestLedgerAfterEtcdRestore(t *testing.T) {
	tests := []struct {
		name string
		// notice is how the running process learns of the restore, if
		// it does before the outcomes are recorded again. Each of them
		// is a version that went backwards, reported to OnRewind (the
		// manager stops on it).
		notice func(s *restoreScenario, t *testing.T)
	}{
		{name: "the watch relists", notice: (*restoreScenario).relist},
		{name: "the pages are listed", notice: func(s *restoreScenario, t *testing.T) {
			if err := s.l.verify(context.Background()); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a page is read", notice: func(s *restoreScenario, t *testing.T) {
			_, _, err := s.l.Find(context.Background(), s.lost[0].Key)
			if err != nil && !errors.Is(err, ErrRebuilding) {
				t.Fatal(err)
			}
		}},
		{name: "an append conflicts"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			rebuilds := testutil.ToFloat64(indexRebuildsTotal)
			s := newRestoreScenario(t, "restore")
			if tt.notice != nil {
				tt.notice(s, t)
				if s.rewinds.Load() == 0 {
					t.Fatal("the restore was noticed, but not reported to OnRewind")
				}
				// Whatever the rebuild has done yet, no lost outcome is
				// reported recorded: the TTL collector would delete its job.
				for _, e := range s.lost {
					if s.l.has(e.Key) {
						t.Fatalf("Has(%s) is true after the restore lost it", e.Key)
					}
				}
			}
			// The jobs whose outcomes were lost finish again and record them.
			for _, e := range s.lost {
				if err := s.l.Record(ctx, e); err != nil {
					t.Fatal(err)
				}
			}
			// New outcomes after the restore.
			after := make([]Entry, 0, restoreJobs)
			for i := range restoreJobs {
				e := entry(s.prefix, 2*restoreJobs+i, time.Now())
				after = append(after, e)
				if err := s.l.Record(ctx, e); err != nil {
					t.Fatal(err)
				}
			}
			seen := occurrences(t, s.prefix)
			for _, e := range append(append(append([]Entry{}, s.before...), s.lost...), after...) {
				if seen[e.Key] != 1 {
					t.Errorf("%s is on the pages %d times, want once", e.Key, seen[e.Key])
				}
				got, found, err := s.l.Find(ctx, e.Key)
				if err != nil || !found || got.Charge != e.Charge {
					t.Errorf("Find(%s) = %v, %v, %v", e.Key, got.Charge, found, err)
				}
				if !s.l.has(e.Key) {
					t.Errorf("Has(%s) is false once recorded", e.Key)
				}
			}
			if got := testutil.ToFloat64(indexRebuildsTotal) - rebuilds; got < 1 {
				t.Errorf("%v index rebuilds after the restore, want at least one", got)
			}
		})
	}
}
