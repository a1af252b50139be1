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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/childproc"
)

const (
	// restoreJobs is the batch an etcd snapshot is taken in the middle
	// of; restoreLaterJobs are created after the restore.
	restoreJobs      = 40
	restoreLaterJobs = 10
	// restoreTTL is the ttlSecondsAfterFinished of half the batch: long
	// enough for the jobs the restore takes back to finish again first.
	restoreTTL = 45
)

// TestEtcdRestore restores etcd from a snapshot taken in the middle of a
// batch, under a running manager, as an administrator would:
// kube-apiserver stopped, etcd stopped, `etcdutl snapshot restore` into its
// data folder, etcd and kube-apiserver started again. "naive" restores
// without --bump-revision (resourceVersions go back below the ones the
// manager has seen); "bump-revision" with --bump-revision --mark-compacted
// (the watches relist, with pages older than they reported). The jobs
// finished after the snapshot go back to what they were (the sandbox still
// remembers their keys and replays), and their ledger entries are gone
// from the pages; jobs are created right after the restore.
//
// Nothing touches the jobs after the restore: the manager notices that
// resourceVersions went backwards, logs it and exits with
// exitEtcdRestored, and is started again, as its Deployment would. Then
// the jobs the restore took back finish again, the jobs created after the
// restore are started and finish, every outcome is in the ledger exactly
// once, the ledger finds entries written after the restore (re-created
// jobs end FoundInLedger, with no request to the sandbox), the TTL
// collector does not delete a job whose outcome the restore took from the
// ledger, and the sandbox holds one charge per job.
//
// The two run side by side: each on a control plane, a manager and a
// sandbox of its own, and most of each one's minute is the wait for the
// TTL.
func TestEtcdRestore(t *testing.T) {
	for _, bump := range []bool{false, true} {
		name := "naive"
		if bump {
			name = "bump-revision"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			testEtcdRestore(t, bump)
		})
	}
}

const (
	// exitEtcdRestored is the manager's exit code after it noticed an
	// etcd restored from a snapshot (cmd/main.go).
	exitEtcdRestored = 3
	// logEtcdRestored is what the manager logs then.
	logEtcdRestored = "etcd was restored from a snapshot"
	// restoreExitTimeout bounds the time from the API server answering
	// again to the manager's exit: a check every 5 s, then the
	// reconciles in flight end.
	restoreExitTimeout = 45 * time.Second
)

func testEtcdRestore(t *testing.T, bump bool) {
	g := NewWithT(t)
	ctx := context.Background()
	etcdutl := filepath.Join(suite.assets, "etcdutl")
	if _, err := os.Stat(etcdutl); err != nil {
		t.Fatalf("etcdutl missing from KUBEBUILDER_ASSETS: run `make envtest-assets`, which builds it: %v", err)
	}
	name := "etcd-restore"
	if bump {
		name += "-bump"
	}
	started := time.Now()
	c := startCluster(t, filepath.Join(suite.artifacts, name, "control-plane"))
	s := newScenarioOn(t, c, name)
	// Each charge takes a while, so that the snapshot falls mid-batch.
	g.Expect(s.sandbox.SetLatency(ctx, time.Second)).To(Succeed())
	batch := s.planJobs(restoreJobs, func(_ int, j *plannedJob) { j.declined = false })
	// Half the batch has a TTL: the collector deletes those jobs while the
	// manager's index of the ledger may still be the one of before the
	// restore. The other half stays until the end.
	var withTTL, kept []plannedJob
	for i, p := range batch {
		if i%2 == 0 {
			withTTL = append(withTTL, p)
		} else {
			kept = append(kept, p)
		}
	}
	m := s.startManager(managerOptions{})
	s.createJobsWithTTL(withTTL, restoreTTL)
	s.createJobs(kept)

	// The snapshot, mid-batch, once the ledger holds outcomes (a page the
	// restore puts back older, not one it deletes). Jobs not finished
	// right after it were not finished in it: the restore takes their
	// outcomes back.
	g.Eventually(func(g Gomega) {
		var pages paymentsv1alpha1.PaymentLedgerList
		g.Expect(s.cluster.k8s.List(ctx, &pages)).To(Succeed())
		entries := 0
		for _, p := range pages.Items {
			entries += len(p.Entries)
		}
		g.Expect(entries).To(BeNumerically(">=", restoreJobs/4))
	}, terminalTimeout, 100*time.Millisecond).Should(Succeed())
	snapshot := filepath.Join(s.dir, "etcd.snapshot")
	g.Expect(c.cp.snapshotEtcd(snapshot)).To(Succeed())
	live, err := s.list()
	g.Expect(err).NotTo(HaveOccurred())
	var rewound []plannedJob
	for _, p := range batch {
		if j := live[p.key()]; !terminal(&j) {
			rewound = append(rewound, p)
		}
	}
	t.Logf("%s: etcd snapshot with %d of %d jobs not finished", name, len(rewound), len(batch))
	g.Expect(rewound).NotTo(BeEmpty(), "the snapshot must be taken mid-batch")

	// The batch ends, and its outcomes are recorded, before the restore.
	s.waitForTerminal(restoreJobs, terminalTimeout)
	s.expectInLedger(batch, false)
	revision, err := c.cp.restoreEtcd(etcdutl, snapshot, bump)
	g.Expect(err).NotTo(HaveOccurred())
	restored := time.Now()
	t.Logf("%s: etcd at revision %d restored (bump-revision %t) %s after the start", name, revision,
		bump, time.Since(started).Round(time.Second))

	// Jobs created right after the restore: a manager whose watches went
	// blind would never start them.
	later := s.planJobs(restoreLaterJobs, func(i int, j *plannedJob) {
		j.declined = false
		j.name = fmt.Sprintf("later-%04d", i)
	})
	s.createJobs(later)

	// The manager notices the restore by itself and exits, saying why;
	// its Deployment would start it again, and so does the test. Nothing
	// else touches the jobs.
	g.Eventually(m.Done(), restoreExitTimeout).Should(BeClosed(),
		"the manager still runs %s after the restore", restoreExitTimeout)
	t.Logf("%s: the manager exited %s after the API server was back", name, time.Since(restored).Round(100*time.Millisecond))
	g.Expect(m.ExitCode()).To(Equal(exitEtcdRestored), "the manager's exit code; last lines of its log:\n%s",
		childproc.Tail(m.Log, 20))
	g.Expect(m.logContainsFold(logEtcdRestored)).To(BeTrue(), "the manager's log names the restore")
	m = s.startManager(managerOptions{})

	// The batch finishes again and the TTL collector deletes its half;
	// the jobs created after the restore finish; every outcome is in the
	// ledger exactly once, with the sandbox's charge, and no outcome is
	// lost with a deleted job.
	s.waitTerminalOrGone(append(append([]plannedJob{}, kept...), later...), withTTL)
	t.Logf("%s: every job finished %s after the restore", name, time.Since(restored).Round(time.Second))
	NewWithT(t).Eventually(func(g Gomega) {
		live, err := s.list()
		g.Expect(err).NotTo(HaveOccurred())
		var left []string
		for _, p := range withTTL {
			if _, ok := live[p.key()]; ok {
				left = append(left, p.key())
			}
		}
		g.Expect(left).To(BeEmpty(), "jobs the TTL collector has not deleted yet")
	}, restoreTTL*time.Second+terminalTimeout, time.Second).Should(Succeed())
	all := append(append([]plannedJob{}, batch...), later...)
	s.expectInLedger(all, true)
	stats, err := s.sandbox.Stats(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(stats.ChargesByKey).To(HaveLen(len(all)), "keys charged at the sandbox")
	for key, n := range stats.ChargesByKey {
		g.Expect(n).To(Equal(1), "charges of %s", key)
	}
	g.Expect(stats.Charges).To(BeEquivalentTo(len(all)), "charges at the sandbox == jobs")

	// The ledger finds what was written after the restore: the jobs whose
	// outcomes the restore took back and the later jobs, deleted (or
	// TTL-deleted) and created again from the same manifests, end
	// FoundInLedger without a request to the sandbox.
	again := append(append([]plannedJob{}, rewound...), later...)
	for _, p := range again {
		err := s.cluster.k8s.Delete(ctx, p.object(s.name))
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
	}
	s.waitGone(again)
	before, err := s.sandbox.Stats(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	s.createJobs(again)
	live = s.waitTerminalOrGone(again, nil)
	after, err := s.sandbox.Stats(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	var charged []string
	for _, p := range again {
		j := live[p.key()]
		if c := meta.FindStatusCondition(j.Status.Conditions, paymentsv1alpha1.ConditionReady); c == nil || c.Reason != reasonFoundInLedger {
			charged = append(charged, p.key()+": "+describe(&j))
		}
	}
	g.Expect(charged).To(BeEmpty(), "re-created jobs not finished from the ledger")
	g.Expect(after.Requests).To(Equal(before.Requests), "create requests at the sandbox for re-created jobs")
	g.Expect(after.Charges).To(Equal(before.Charges), "charges at the sandbox for re-created jobs")

	// The manager started after the restore runs on.
	g.Expect(m.Exited()).To(BeFalse(), "the restarted manager exited: %v", m.ExitError())
	t.Logf("%s: %d jobs, %d taken back by the restore and recorded again, %d created after it, %d charges; %s in all",
		name, len(all), len(rewound), len(later), after.Charges, time.Since(started).Round(time.Second))
}

// createJobsWithTTL creates the jobs with spec.ttlSecondsAfterFinished.
func (s *scenario) createJobsWithTTL(jobs []plannedJob, ttl int32) {
	s.t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(jobs))
	for _, p := range jobs {
		wg.Go(func() {
			j := p.object(s.name)
			j.Spec.TTLSecondsAfterFinished = &ttl
			errs <- createWithRetry(s.cluster.k8s, j)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		NewWithT(s.t).Expect(err).NotTo(HaveOccurred())
	}
}

// createWithRetry creates obj, retrying over API hiccups for a bounded time.
func createWithRetry(c client.Client, obj client.Object) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := c.Create(context.Background(), obj)
		if err == nil || apierrors.IsAlreadyExists(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cannot create %s: %w", obj.GetName(), err)
		}
		<-time.After(200 * time.Millisecond)
	}
}

// waitTerminalOrGone waits until every job of jobs is terminal, and every
// job of mayGo terminal or deleted; it returns the live jobs.
func (s *scenario) waitTerminalOrGone(jobs, mayGo []plannedJob) map[string]paymentsv1alpha1.PaymentJob {
	s.t.Helper()
	var live map[string]paymentsv1alpha1.PaymentJob
	NewWithT(s.t).Eventually(func(g Gomega) {
		var err error
		live, err = s.list()
		g.Expect(err).NotTo(HaveOccurred())
		var waiting []string
		for _, p := range jobs {
			if j, ok := live[p.key()]; !ok || !terminal(&j) {
				waiting = append(waiting, p.key()+" ("+describe(&j)+")")
			}
		}
		for _, p := range mayGo {
			if j, ok := live[p.key()]; ok && !terminal(&j) {
				waiting = append(waiting, p.key()+" ("+describe(&j)+")")
			}
		}
		g.Expect(waiting).To(BeEmpty(), "%d jobs not terminal yet, first ones: %s",
			len(waiting), strings.Join(waiting[:min(len(waiting), 8)], "; "))
	}, terminalTimeout, time.Second).Should(Succeed())
	return live
}

// waitGone waits until none of the jobs exists.
func (s *scenario) waitGone(jobs []plannedJob) {
	s.t.Helper()
	NewWithT(s.t).Eventually(func(g Gomega) {
		live, err := s.list()
		g.Expect(err).NotTo(HaveOccurred())
		for _, p := range jobs {
			g.Expect(live).NotTo(HaveKey(p.key()))
		}
	}, time.Minute, 500*time.Millisecond).Should(Succeed())
}

// expectInLedger checks the PaymentLedger pages: each job's key exactly
// once, Completed, and with the sandbox's charge for it when withCharges. A
// job is Completed before its outcome is appended (the finalizer comes off
// after), so the pages are read until they hold every outcome, within
// ledgerTimeout; an entry twice never goes away, and fails the check.
func (s *scenario) expectInLedger(jobs []plannedJob, withCharges bool) {
	s.t.Helper()
	NewWithT(s.t).Eventually(func(g Gomega) {
		var pages paymentsv1alpha1.PaymentLedgerList
		g.Expect(s.cluster.k8s.List(context.Background(), &pages)).To(Succeed())
		entries := map[string][]paymentsv1alpha1.LedgerEntry{}
		for _, p := range pages.Items {
			for _, e := range p.Entries {
				entries[e.Key] = append(entries[e.Key], e)
			}
		}
		var wrong []string
		for _, p := range jobs {
			es := entries[p.key()]
			if len(es) != 1 {
				wrong = append(wrong, fmt.Sprintf("%s: %d entries", p.key(), len(es)))
				continue
			}
			if es[0].Outcome != paymentsv1alpha1.LedgerCompleted {
				wrong = append(wrong, fmt.Sprintf("%s: outcome %s", p.key(), es[0].Outcome))
			}
			if !withCharges {
				continue
			}
			intents, err := s.sandbox.IntentsFor(context.Background(), p.key())
			g.Expect(err).NotTo(HaveOccurred())
			if len(intents) != 1 || intents[0].ID != es[0].Charge {
				wrong = append(wrong, fmt.Sprintf("%s: ledger charge %q, sandbox %+v", p.key(), es[0].Charge, intents))
			}
		}
		g.Expect(wrong).To(BeEmpty(), "ledger entries in %d pages", len(pages.Items))
	}, ledgerTimeout, 500*time.Millisecond).Should(Succeed())
}

// ledgerTimeout bounds the wait for finished jobs' outcomes to be in the
// ledger: one group-commit append, or a few under load.
const ledgerTimeout = 30 * time.Second

// snapshotEtcd saves a snapshot of etcd to path, as `etcdctl snapshot
// save` does, through etcd's gRPC gateway (JSON over HTTP, a message per
// chunk).
func (c *controlPlane) snapshotEtcd(path string) error {
	u := *c.env.ControlPlane.Etcd.URL
	u.Path = "/v3/maintenance/snapshot"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader("{}"))
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("cannot snapshot etcd: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("cannot snapshot etcd: %s: %s", resp.Status, body)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var msg struct {
			Result struct {
				Blob []byte `json:"blob"`
			} `json:"result"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		err := dec.Decode(&msg)
		if errors.Is(err, io.EOF) {
			break
		}
		if err == nil && msg.Error != nil {
			err = errors.New(msg.Error.Message)
		}
		if err == nil {
			_, err = f.Write(msg.Result.Blob)
		}
		if err != nil {
			_ = f.Close()
			return fmt.Errorf("cannot snapshot etcd: %w", err)
		}
	}
	return f.Close()
}

// restoreEtcd restores etcd from snapshot as an administrator would:
// kube-controller-manager, kube-apiserver and etcd stopped, the data folder
// replaced by `etcdutl snapshot restore` (with --bump-revision
// --mark-compacted when bump is true), then etcd and kube-apiserver started
// again on the same ports. It returns etcd's revision before the restore.
func (c *controlPlane) restoreEtcd(etcdutl, snapshot string, bump bool) (int64, error) {
	if _, err := c.stopAPIServer(); err != nil {
		return 0, err
	}
	revision, err := c.etcdRevision()
	if err != nil {
		return 0, err
	}
	return revision, c.restoreStopped(etcdutl, snapshot, bump)
}

// etcdRevision is etcd's current revision, read through its gRPC gateway.
func (c *controlPlane) etcdRevision() (int64, error) {
	u := *c.env.ControlPlane.Etcd.URL
	u.Path = "/v3/kv/range"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(`{"key":"AA==","count_only":true}`))
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("cannot read etcd's revision: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	var out struct {
		Header struct {
			Revision int64 `json:"revision,string"`
		} `json:"header"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.Header.Revision == 0 {
		return 0, fmt.Errorf("cannot read etcd's revision (%s): %v", resp.Status, err)
	}
	return out.Header.Revision, nil
}

// restoreStopped is restoreEtcd once kube-apiserver is stopped.
func (c *controlPlane) restoreStopped(etcdutl, snapshot string, bump bool) error {
	etcd := c.env.ControlPlane.Etcd
	if err := etcd.Stop(); err != nil {
		return fmt.Errorf("cannot stop etcd: %w", err)
	}
	if err := os.RemoveAll(etcd.DataDir); err != nil {
		return err
	}
	args := []string{"snapshot", "restore", snapshot, "--data-dir", etcd.DataDir}
	if bump {
		args = append(args, "--bump-revision", "1000000000", "--mark-compacted")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, etcdutl, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("etcdutl %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	if err := etcd.Start(); err != nil {
		return fmt.Errorf("cannot start etcd on the restored data: %w", err)
	}
	return c.startAPIServer()
}
