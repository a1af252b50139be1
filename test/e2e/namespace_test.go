//go:build e2e

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

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// namespaceJobs is the jobs in flight when their namespaces are deleted.
const namespaceJobs = 100

// TestNamespaceDeletionWithPaymentsInFlight deletes the tenant's namespaces
// while its 100 jobs are being charged through a slow sandbox, and lets
// kube-controller-manager's namespace controller do the rest, as in a real
// cluster: it deletes the Secrets at once and the jobs and the
// PaymentProviders as their finalizers allow. Every job that was claimed
// must end Completed with exactly one charge (through the adapter the
// manager kept after the Secret and the provider were deleted) before it
// goes; a job not yet claimed goes uncharged; no charge belongs to a job
// that went without recording it; and then the namespaces are gone.
func TestNamespaceDeletionWithPaymentsInFlight(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	s := newScenario(t, "ns-delete", "--latency-min=300ms", "--latency-max=900ms")
	jobs := s.planJobs(namespaceJobs, func(_ int, j *plannedJob) { j.declined = false })

	// The last state of every job, as the API server last showed it.
	var mu sync.Mutex
	last := map[string]paymentsv1alpha1.PaymentJob{}
	gone := map[string]bool{}
	s.watchJobs(func(ev watch.EventType, j *paymentsv1alpha1.PaymentJob) {
		mu.Lock()
		defer mu.Unlock()
		key := j.Namespace + "/" + j.Name
		last[key] = *j
		if ev == watch.Deleted {
			gone[key] = true
		}
	})
	s.startManager(managerOptions{})
	s.createJobs(jobs)

	// Delete while charges are in flight: some claimed, not all finished.
	var processing int
	g.Eventually(func(g Gomega) {
		live, err := s.list()
		g.Expect(err).NotTo(HaveOccurred())
		processing = 0
		for _, j := range live {
			if j.Status.Phase == paymentsv1alpha1.PhaseProcessing {
				processing++
			}
		}
		g.Expect(processing).To(BeNumerically(">=", 5))
	}, time.Minute, 20*time.Millisecond).Should(Succeed())
	before, err := s.sandbox.Stats(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	deletedAt := time.Now()
	for _, ns := range s.namespaces {
		g.Expect(s.cluster.k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	}
	t.Logf("ns-delete: namespaces deleted with %d jobs Processing and %d charges made", processing, before.Charges)

	g.Eventually(func(g Gomega) {
		var stuck []string
		for _, ns := range s.namespaces {
			err := s.cluster.k8s.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
			if apierrors.IsNotFound(err) {
				continue
			}
			g.Expect(err).NotTo(HaveOccurred())
			mu.Lock()
			for key, j := range last {
				if strings.HasPrefix(key, ns+"/") && !gone[key] {
					stuck = append(stuck, key+" ("+describe(&j)+")")
				}
			}
			mu.Unlock()
			stuck = append(stuck, "namespace "+ns)
		}
		sort.Strings(stuck)
		g.Expect(stuck).To(BeEmpty(), "still there: %s", strings.Join(stuck[:min(len(stuck), 8)], "; "))
	}, terminalTimeout, 250*time.Millisecond).Should(Succeed())
	took := time.Since(deletedAt)

	stats, err := s.sandbox.Stats(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	mu.Lock()
	defer mu.Unlock()
	var problems []string
	completed, unclaimed, finishedAfter := 0, 0, 0
	for _, p := range jobs {
		key := p.key()
		j, seen := last[key]
		charged := stats.ChargesByKey[key]
		switch {
		case !seen:
			problems = append(problems, key+" was never seen")
		case j.Status.Phase == paymentsv1alpha1.PhaseCompleted:
			completed++
			if charged != 1 || j.Status.ProviderResponse == nil {
				problems = append(problems, fmt.Sprintf("%s Completed with %d charges", key, charged))
				continue
			}
			intents, err := s.sandbox.IntentsFor(context.Background(), key)
			if err != nil || len(intents) != 1 || intents[0].ID != j.Status.ProviderResponse.ID {
				problems = append(problems, fmt.Sprintf("%s records %s, the sandbox holds %+v (%v)", key, j.Status.ProviderResponse.ID, intents, err))
			}
			if j.Status.CompletedAt != nil && j.Status.CompletedAt.After(deletedAt) {
				finishedAfter++
			}
		case j.Status.IdempotencyKey == "":
			// Never claimed: nothing was sent, and nothing may be charged.
			unclaimed++
			if charged != 0 {
				problems = append(problems, fmt.Sprintf("%s went unclaimed (%s) but was charged %d times", key, describe(&j), charged))
			}
		default:
			problems = append(problems, fmt.Sprintf("%s went without its outcome: %s, %d charges", key, describe(&j), charged))
		}
	}
	for key, n := range stats.ChargesByKey {
		if j, ok := last[key]; !ok || j.Status.Phase != paymentsv1alpha1.PhaseCompleted {
			problems = append(problems, fmt.Sprintf("%s was charged %d times and no Completed job records it", key, n))
		}
	}
	sort.Strings(problems)
	g.Expect(problems).To(BeEmpty())
	g.Expect(stats.Charges).To(BeEquivalentTo(completed), "one charge per Completed job")
	g.Expect(finishedAfter).To(BeNumerically(">", 0), "some jobs were charged after their namespace was deleted")
	fmt.Printf("e2e scenario=ns-delete jobs=%d processing_at_delete=%d completed=%d completed_after_delete=%d unclaimed=%d charges=%d seconds_to_gone=%.1f\n",
		len(jobs), processing, completed, finishedAfter, unclaimed, stats.Charges, took.Seconds())
}
