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

// Package rewind notices that the cluster's etcd was restored from a
// snapshot under the running manager, and stops the manager, so that it
// starts again with fresh caches (its Deployment restarts it).
//
// An etcd restored without --bump-revision takes its revision back: the
// manager's watches resume from a revision etcd has not reached again and
// report nothing (restored jobs are never reconciled from their restored
// state, new jobs never started), and once etcd counts back up, a cached
// copy's resourceVersion can match an object it is not: optimistic
// concurrency no longer protects a write. controller-runtime's informers
// cannot be told to relist from outside, so the only sound answer is a new
// process, as Kubernetes advises every component after a restore.
//
// A Detector notices resourceVersions that go backwards, which they never do
// otherwise (compaction removes old revisions but never lowers the current
// one; --bump-revision raises it):
//   - every Interval, a list of each watched kind with limit 1, read from
//     the API server: its resourceVersion is the current revision, never
//     lower than one seen before the list, unless etcd went back;
//   - an informer reporting an object at a version older than the one it
//     held (a watch that relisted a restored etcd, --bump-revision
//     --mark-compacted);
//   - whatever else noticed it and calls Rewound (the outcome ledger
//     comparing its pages).
//
// Its Start then returns an error wrapping ErrEtcdRestored, which stops the
// manager; cmd/main.go exits with a code of its own. It runs on every
// replica, leader or not: a standby's caches are as stale as the leader's,
// and it would lead on them.
package rewind

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// ErrEtcdRestored is wrapped by the error a Detector stops the manager with.
var ErrEtcdRestored = errors.New("etcd was restored from a snapshot under this process: resourceVersions went backwards, " +
	"and its caches and watches can no longer be trusted")

const (
	// DefaultInterval is the time between two checks.
	DefaultInterval = 5 * time.Second
	// retryInterval is the time before the next check after one that
	// failed: the API server is down, as it is during a restore, and the
	// first answer after it is the one to compare.
	retryInterval = time.Second
)

// Options configure a Detector.
type Options struct {
	// Interval is the time between two checks; DefaultInterval when zero.
	Interval time.Duration
	// Namespace restricts the lists of the checks to one namespace, for a
	// manager whose permissions stop there; "" lists every namespace.
	Namespace string
	// Clock paces the checks; the real clock when nil.
	Clock clock.Clock
}

// Detector notices an etcd restored under the running process (see the
// package comment). Its Start stops the manager when it does. It is safe
// for concurrent use.
type Detector struct {
	reader client.Reader
	opts   Options
	// kinds are the watched kinds, each with its newest version seen.
	kinds []*kind

	// found is closed at the first rewind; why says what showed it, as
	// log key/values.
	found chan struct{}
	mu    sync.Mutex
	why   []any
}

// kind is one watched kind: the list its check reads, and the newest
// resourceVersion seen of it. Each kind is compared with itself only: an
// API server may keep kinds in different etcd clusters
// (--etcd-servers-overrides), whose revisions have nothing in common.
type kind struct {
	gvk schema.GroupVersionKind
	// object is what its informer holds (a typed object).
	object client.Object

	mu sync.Mutex
	// newest is the newest resourceVersion seen: reported by the
	// informer, or of a list.
	newest string
}

// New returns a Detector of the kinds of objects (typed objects of scheme,
// one per kind), which checks with reader: it must read from the API
// server, never from a cache.
func New(reader client.Reader, scheme *runtime.Scheme, opts Options, objects ...client.Object) (*Detector, error) {
	if reader == nil || scheme == nil || len(objects) == 0 {
		return nil, errors.New("the rewind detector needs a reader of the API server, a scheme and the kinds to watch")
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	d := &Detector{reader: reader, opts: opts, found: make(chan struct{})}
	for _, obj := range objects {
		gvk, err := apiutil.GVKForObject(obj, scheme)
		if err != nil {
			return nil, fmt.Errorf("cannot watch %T for a restored etcd: %w", obj, err)
		}
		d.kinds = append(d.kinds, &kind{gvk: gvk, object: obj})
	}
	return d, nil
}

// Rewound tells the detector that resourceVersions went backwards; why
// says what showed it, as log key/values. It returns at once, and may be
// called with any lock held.
func (d *Detector) Rewound(why ...any) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.why != nil {
		return
	}
	d.why = append([]any{}, why...)
	if len(d.why) == 0 {
		d.why = []any{"source", "unknown"}
	}
	close(d.found)
}

// WatchInformers adds a handler to the informer of each watched kind: the
// versions it reports raise the newest seen, and an object reported at a
// version older than the one the informer held is a rewind.
func (d *Detector) WatchInformers(ctx context.Context, informers cache.Informers) error {
	for _, k := range d.kinds {
		informer, err := informers.GetInformer(ctx, k.object, cache.BlockUntilSynced(false))
		if err != nil {
			return fmt.Errorf("cannot watch %s for a restored etcd: %w", k.gvk.Kind, err)
		}
		_, err = informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(o any) {
				if m, ok := o.(metav1.Object); ok {
					k.saw(m.GetResourceVersion())
				}
			},
			UpdateFunc: func(oldObj, newObj any) {
				o, ok1 := oldObj.(metav1.Object)
				n, ok2 := newObj.(metav1.Object)
				if !ok1 || !ok2 {
					return
				}
				if older(n.GetResourceVersion(), o.GetResourceVersion()) {
					d.Rewound("kind", k.gvk.Kind, "object", client.ObjectKey{Namespace: n.GetNamespace(), Name: n.GetName()}.String(),
						"reportedAt", n.GetResourceVersion(), "after", o.GetResourceVersion())
					return
				}
				k.saw(n.GetResourceVersion())
			},
		})
		if err != nil {
			return fmt.Errorf("cannot watch %s for a restored etcd: %w", k.gvk.Kind, err)
		}
	}
	return nil
}

// saw raises the newest version seen of the kind to rv.
func (k *kind) saw(rv string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.newest == "" || older(k.newest, rv) {
		k.newest = rv
	}
}

// seen is the newest version seen of the kind.
func (k *kind) seen() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.newest
}

// NeedLeaderElection is false: every replica checks its own caches.
func (d *Detector) NeedLeaderElection() bool { return false }

// Start checks every Interval until ctx ends, or until a rewind is noticed:
// it then logs what showed it and returns an error wrapping
// ErrEtcdRestored, which stops the manager.
func (d *Detector) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("rewind")
	for {
		next := d.opts.Interval
		if err := d.Check(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			logger.V(1).Info("Cannot check for a restored etcd", "error", err.Error())
			next = min(retryInterval, d.opts.Interval)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-d.found:
			d.mu.Lock()
			why := d.why
			d.mu.Unlock()
			logger.Error(ErrEtcdRestored, "Stopping the manager: etcd was restored from a snapshot under it; "+
				"it must start again with fresh caches (its Deployment restarts it)", why...)
			return fmt.Errorf("%w (%s)", ErrEtcdRestored, describe(why))
		case <-d.opts.Clock.After(next):
		}
	}
}

// Check lists each watched kind with limit 1 from the API server and
// compares the list's resourceVersion, the current revision, with the
// newest version seen of the kind before the list: lower is a rewind. It
// returns the error of a list that failed.
func (d *Detector) Check(ctx context.Context) error {
	for _, k := range d.kinds {
		// Only what was seen before the list is compared with it: a
		// write reported meanwhile may be newer than the list.
		before := k.seen()
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(k.gvk.GroupVersion().WithKind(k.gvk.Kind + "List"))
		opts := []client.ListOption{client.Limit(1)}
		if d.opts.Namespace != "" {
			opts = append(opts, client.InNamespace(d.opts.Namespace))
		}
		if err := d.reader.List(ctx, list, opts...); err != nil {
			return fmt.Errorf("cannot list %s: %w", k.gvk.Kind, err)
		}
		if older(list.ResourceVersion, before) {
			d.Rewound("kind", k.gvk.Kind, "listedAt", list.ResourceVersion, "after", before)
			return nil
		}
		k.saw(list.ResourceVersion)
	}
	return nil
}

// older reports whether resourceVersion a is older than b. Versions that
// are empty or cannot be compared are not.
func older(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	c, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && c < 0
}

// describe is why, key/values, as text for the error.
func describe(why []any) string {
	s := ""
	for i := 0; i+1 < len(why); i += 2 {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("%v %v", why[i], why[i+1])
	}
	return s
}
