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

package controller

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// CacheOptions are the manager's cache settings. Finished PaymentJobs (the
// LabelFinished label) are filtered out by the API server, so the cache, and
// the manager's memory, grow with active jobs only, however much history the
// cluster keeps; managedFields, which the operator never reads, are dropped
// from every cached object. Secrets are cached only when labelled
// LabelCredentials=true: the API server never sends the manager any other
// Secret, and a provider that names one finds nothing. namespaces, if any,
// restrict the cache to them.
func CacheOptions(namespaces ...string) cache.Options {
	opts := cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&paymentsv1alpha1.PaymentJob{}: {Label: unfinished()},
			&corev1.Secret{}:               {Label: credentials()},
		},
		// Writes of cached copies keep the server's managedFields: nil
		// means unchanged.
		DefaultTransform: cache.TransformStripManagedFields(),
	}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}

// unfinished selects the PaymentJobs without the finished label.
func unfinished() labels.Selector {
	req, err := labels.NewRequirement(paymentsv1alpha1.LabelFinished, selection.DoesNotExist, nil)
	if err != nil {
		panic(fmt.Sprintf("invalid finished-label requirement: %v", err))
	}
	return labels.NewSelector().Add(*req)
}

// credentials selects the Secrets marked for the operator.
func credentials() labels.Selector {
	return labels.SelectorFromSet(labels.Set{paymentsv1alpha1.LabelCredentials: "true"})
}

// InformersSynced is a readiness check that passes once the cache holds
// every PaymentJob and PaymentProvider it watches: a manager that reports
// ready has seen the jobs it is responsible for.
func InformersSynced(c cache.Cache) healthz.Checker {
	return func(req *http.Request) error {
		for _, obj := range []client.Object{&paymentsv1alpha1.PaymentJob{}, &paymentsv1alpha1.PaymentProvider{}} {
			informer, err := c.GetInformer(req.Context(), obj, cache.BlockUntilSynced(false))
			if err != nil {
				return fmt.Errorf("no informer for %T: %w", obj, err)
			}
			if !informer.HasSynced() {
				return fmt.Errorf("the %T cache has not synced yet", obj)
			}
		}
		return nil
	}
}

// writtenVersions remembers, per job, the resourceVersion that this
// process's latest accepted write returned. A watch event can trail a write:
// a reconcile that reads an older copy from the cache would only make a
// write that the API server refuses with a conflict, so it is skipped, and
// the event of the write itself brings the job back. Entries are dropped
// when the job leaves the cache (deleted or finished), so the map holds
// active jobs only. An entry is trusted for writtenVersionTTL: a watch never
// lags that long, and resourceVersions that went backwards (an etcd restored
// from a backup) must not hold a job back for longer.
type writtenVersions struct {
	mu       sync.Mutex
	versions map[types.NamespacedName]writtenVersion
}

type writtenVersion struct {
	uid             types.UID
	resourceVersion string
	at              time.Time
}

// writtenVersionTTL is how long a remembered write can hold back older
// cached copies.
const writtenVersionTTL = time.Minute

// record remembers job's resourceVersion as this process's latest write.
func (w *writtenVersions) record(job client.Object, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.versions == nil {
		w.versions = map[types.NamespacedName]writtenVersion{}
	}
	w.versions[client.ObjectKeyFromObject(job)] = writtenVersion{
		uid: job.GetUID(), resourceVersion: job.GetResourceVersion(), at: now,
	}
}

// stale reports whether job is an older copy than this process's latest
// write of it. Versions that are not comparable integers are never stale:
// the resourceVersion guard of every write still catches the stale copy.
func (w *writtenVersions) stale(job client.Object, now time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, ok := w.versions[client.ObjectKeyFromObject(job)]
	if !ok {
		return false
	}
	if v.uid != job.GetUID() || now.Sub(v.at) > writtenVersionTTL {
		// Deleted and created again under the same name, or too old to trust.
		delete(w.versions, client.ObjectKeyFromObject(job))
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(job.GetResourceVersion(), v.resourceVersion)
	return err == nil && cmp < 0
}

// forget drops the entry of a job that left the cache.
func (w *writtenVersions) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.versions, key)
}
