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
	"time"

	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// writtenVersions remembers, per object, the resourceVersion that this
// process's latest accepted write returned. A watch event can trail a write:
// a reconcile that reads an older copy from the cache would only make a
// write that the API server refuses with a conflict, so it is skipped, and
// the event of the write itself brings the object back. Entries are dropped
// when the object leaves the cache (deleted or finished), so the map holds
// active objects only. An entry is trusted for writtenVersionTTL: a watch never
// lags that long, and resourceVersions that went backwards (an etcd restored
// from a backup) must not hold an object back for longer.
type writtenVersions struct {
	jobMemory[writtenVersion]
}

type writtenVersion struct {
	resourceVersion string
	at              time.Time
}

// writtenVersionTTL is how long a remembered write can hold back older
// cached copies.
const writtenVersionTTL = time.Minute

// record remembers object's resourceVersion as this process's latest write.
func (w *writtenVersions) record(obj client.Object, now time.Time) {
	w.set(obj, writtenVersion{resourceVersion: obj.GetResourceVersion(), at: now})
}

// stale reports whether object is an older copy than this process's latest
// write of it. Versions that are not comparable integers are never stale:
// the resourceVersion guard of every write still catches the stale copy.
func (w *writtenVersions) stale(obj client.Object, now time.Time) bool {
	v, ok := w.get(obj)
	if !ok {
		return false
	}
	if now.Sub(v.at) > writtenVersionTTL {
		// Too old to trust.
		w.forget(client.ObjectKeyFromObject(obj))
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(obj.GetResourceVersion(), v.resourceVersion)
	return err == nil && cmp < 0
}
