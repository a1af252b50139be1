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

package rewind_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	testclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/cache/informertest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/rewind"
)

// apiServer is the API server as the checks read it: each list answers the
// current revision, or an error while the server is down.
type apiServer struct {
	client.Reader
	mu       sync.Mutex
	revision string
	down     bool
	lists    int
}

func (a *apiServer) List(_ context.Context, list client.ObjectList, opts ...client.ListOption) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lists++
	o := (&client.ListOptions{}).ApplyOptions(opts)
	if o.Limit != 1 {
		return errors.New("the check must list with limit 1")
	}
	if a.down {
		return errors.New("connection refused")
	}
	list.(*metav1.PartialObjectMetadataList).ResourceVersion = a.revision
	return nil
}

func (a *apiServer) set(revision string, down bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.revision, a.down = revision, down
}

func (a *apiServer) listed() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.lists
}

const interval = 5 * time.Second

// detection is a running detector of PaymentJobs, on a fake clock and
// fake informers.
type detection struct {
	g         *WithT
	api       *apiServer
	clock     *testclock.FakeClock
	informers *informertest.FakeInformers
	stopped   chan error
	// detectorRewound is the detector's Rewound, as the ledger calls it.
	detectorRewound func(why ...any)
}

func startDetection(t *testing.T, revision string) *detection {
	t.Helper()
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(paymentsv1alpha1.AddToScheme(scheme)).To(Succeed())
	d := &detection{g: g, api: &apiServer{revision: revision}, clock: testclock.NewFakeClock(time.Now()),
		informers: &informertest.FakeInformers{Scheme: scheme}, stopped: make(chan error, 1)}
	detector, err := rewind.New(d.api, scheme, rewind.Options{Interval: interval, Clock: d.clock}, &paymentsv1alpha1.PaymentJob{})
	g.Expect(err).NotTo(HaveOccurred())
	d.detectorRewound = detector.Rewound
	g.Expect(detector.WatchInformers(context.Background(), d.informers)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	go func() { d.stopped <- detector.Start(ctx) }()
	t.Cleanup(cancel)
	d.waitForCheck(1)
	return d
}

// waitForCheck waits until the detector has listed n times and waits for
// its next check.
func (d *detection) waitForCheck(n int) {
	d.g.Eventually(d.api.listed, 5*time.Second, time.Millisecond).Should(BeNumerically(">=", n))
	d.g.Eventually(d.clock.HasWaiters, 5*time.Second, time.Millisecond).Should(BeTrue())
}

// tick moves the clock by step and waits for the check it starts.
func (d *detection) tick(step time.Duration) {
	n := d.api.listed()
	d.clock.Step(step)
	d.waitForCheck(n + 1)
}

func job(rv string) *paymentsv1alpha1.PaymentJob {
	return &paymentsv1alpha1.PaymentJob{ObjectMeta: metav1.ObjectMeta{Namespace: "billing", Name: "invoice-42", ResourceVersion: rv}}
}

func (d *detection) informer() interface {
	Add(metav1.Object)
	Update(oldObj, newObj metav1.Object)
} {
	i, err := d.informers.FakeInformerFor(context.Background(), &paymentsv1alpha1.PaymentJob{})
	d.g.Expect(err).NotTo(HaveOccurred())
	return i
}

// expectStopped expects the detector to have stopped the manager with
// ErrEtcdRestored, without the clock moving any further.
func (d *detection) expectStopped(mentions string) {
	var err error
	d.g.Eventually(d.stopped, 5*time.Second).Should(Receive(&err))
	d.g.Expect(err).To(MatchError(rewind.ErrEtcdRestored))
	d.g.Expect(err.Error()).To(ContainSubstring(mentions))
}

// A manager left running across an etcd restore is stopped at the next
// check after the API server answers again (one Interval at most, one
// second after a check that failed), or at once when its informer or the
// ledger sees an object go back.
func TestDetectorStopsTheManagerWhenResourceVersionsGoBackwards(t *testing.T) {
	tests := []struct {
		name string
		// restore happens to the running detector; it ends with the
		// check (or event) that must notice.
		restore  func(d *detection)
		mentions string
	}{{
		name: "a naive restore while the manager checks: the next list is older than the last",
		restore: func(d *detection) {
			d.api.set("1200", false)
			d.tick(interval)
			d.api.set("900", false)
			d.clock.Step(interval)
		},
		mentions: "listedAt 900, after 1200",
	}, {
		name: "the API server down during the restore: the first answer after it, a second later",
		restore: func(d *detection) {
			d.api.set("1200", false)
			d.tick(interval)
			d.api.set("", true)
			d.tick(interval)
			d.tick(time.Second)
			d.api.set("1000", false)
			d.clock.Step(time.Second)
		},
		mentions: "listedAt 1000, after 1200",
	}, {
		name: "the list is older than a write the informer reported",
		restore: func(d *detection) {
			d.informer().Add(job("1500"))
			d.api.set("1400", false)
			d.clock.Step(interval)
		},
		mentions: "listedAt 1400, after 1500",
	}, {
		name: "a relisting informer reports an object older than it held (--bump-revision)",
		restore: func(d *detection) {
			d.api.set("1000001000", false)
			d.tick(interval)
			d.informer().Update(job("1300"), job("1100"))
		},
		mentions: "object billing/invoice-42, reportedAt 1100, after 1300",
	}, {
		name: "the ledger saw a page go back",
		restore: func(d *detection) {
			d.detectorRewound("page", "ledger-00000001", "watched", "900", "after", "1000")
		},
		mentions: "page ledger-00000001",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := startDetection(t, "1000")
			tt.restore(d)
			d.expectStopped(tt.mentions)
		})
	}
}

// Revisions only grow in a cluster that was not restored: compaction
// leaves the current revision, --bump-revision raises it, an API server
// down answers nothing. None of it stops the manager.
func TestDetectorLeavesTheManagerRunningWhileRevisionsGrow(t *testing.T) {
	g := NewWithT(t)
	d := startDetection(t, "1000")
	d.informer().Add(job("1000"))
	d.informer().Update(job("1000"), job("1000"))
	d.informer().Update(job("1000"), job("1010"))
	for _, step := range []struct {
		revision string
		down     bool
	}{{"1010", false}, {"", true}, {"1010", false}, {"1000002000", false}, {"1000002001", false}} {
		d.api.set(step.revision, step.down)
		d.tick(interval)
	}
	d.informer().Add(job("17")) // a relist reports objects unchanged for long
	d.tick(interval)
	g.Expect(d.stopped).NotTo(Receive(), "the detector stopped the manager")
}
