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

package engine

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// jobMemory is what this process remembers of each object between passes: its
// latest write, the time of its next attempt, since when it waits for a
// rate limit. It lives in memory only, and nothing depends on it for
// exactly-once; entries are per object, so an object deleted and created again
// under its name (another UID) starts afresh, and Reconcile forgets an object
// that left the cache.
type jobMemory[V any] struct {
	mu sync.Mutex
	m  map[types.NamespacedName]remembered[V]
}

type remembered[V any] struct {
	uid types.UID
	v   V
}

// set remembers v for object.
func (j *jobMemory[V]) set(obj client.Object, v V) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.m == nil {
		j.m = map[types.NamespacedName]remembered[V]{}
	}
	j.m[client.ObjectKeyFromObject(obj)] = remembered[V]{uid: obj.GetUID(), v: v}
}

// get returns what is remembered for object. An entry of another object under
// the same name is dropped.
func (j *jobMemory[V]) get(obj client.Object) (V, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	key := client.ObjectKeyFromObject(obj)
	e, ok := j.m[key]
	if ok && e.uid != obj.GetUID() {
		delete(j.m, key)
		ok = false
	}
	if !ok {
		var zero V
		return zero, false
	}
	return e.v, true
}

// take returns what is remembered for object and forgets it.
func (j *jobMemory[V]) take(obj client.Object) (V, bool) {
	v, ok := j.get(obj)
	if ok {
		j.forget(client.ObjectKeyFromObject(obj))
	}
	return v, ok
}

// forget drops what is remembered for the object with key.
func (j *jobMemory[V]) forget(key types.NamespacedName) {
	j.mu.Lock()
	defer j.mu.Unlock()
	delete(j.m, key)
}

// size is the number of objects remembered.
func (j *jobMemory[V]) size() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.m)
}

// countedJobs is a set of objects in one state, counted by a gauge: the objects
// stalled behind a deleted provider (ProviderDeleted), the finished objects
// stalled on a ledger conflict (LedgerConflict).
type countedJobs struct {
	mu   sync.Mutex
	jobs map[types.NamespacedName]struct{}
}

// set records whether the object with key is in the state after this pass,
// and moves gauge when that changes.
func (c *countedJobs) set(key types.NamespacedName, in bool, gauge prometheus.Gauge) {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, was := c.jobs[key]
	switch {
	case in && !was:
		if c.jobs == nil {
			c.jobs = map[types.NamespacedName]struct{}{}
		}
		c.jobs[key] = struct{}{}
		gauge.Inc()
	case !in && was:
		delete(c.jobs, key)
		gauge.Dec()
	}
}
