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

package campaign

import (
	"reflect"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// pastCopies is how many copies of an object a lagging cache may answer:
// the object as it was after each of the last steps that changed it.
const pastCopies = 4

// remember keeps a copy of every object of the books that changed since
// the last step, for staleRead.
func (c *campaign) remember(b books) {
	if c.past == nil {
		c.past = map[ref][]client.Object{}
	}
	keep := func(r ref, obj client.Object) {
		copies := c.past[r]
		if n := len(copies); n > 0 && copies[n-1].GetUID() == obj.GetUID() &&
			copies[n-1].GetResourceVersion() == obj.GetResourceVersion() {
			return
		}
		copies = append(copies, obj)
		if len(copies) > pastCopies {
			copies = copies[1:]
		}
		c.past[r] = copies
	}
	for i := range b.jobs {
		j := b.jobs[i].DeepCopy()
		keep(ref{kindJob, objectKey(j.Namespace, j.Name)}, j)
	}
	for i := range b.refs {
		rf := b.refs[i].DeepCopy()
		keep(ref{kindRefund, objectKey(rf.Namespace, rf.Name)}, rf)
	}
}

// pastOf are the copies remembered of r's object with uid, oldest first:
// never a copy of an object deleted since and created again under the
// name (a cache that missed a deletion is another fault).
func (c *campaign) pastOf(r ref, uid types.UID) []client.Object {
	var of []client.Object
	for _, obj := range c.past[r] {
		if obj.GetUID() == uid {
			of = append(of, obj.DeepCopyObject().(client.Object))
		}
	}
	return of
}

// takeStale returns, once, the older copy of key that the next cached
// read of obj's type by holder answers, or nil.
func (w *world) takeStale(holder string, key client.ObjectKey, obj client.Object) client.Object {
	if holder == "" {
		return nil
	}
	w.staleMu.Lock()
	defer w.staleMu.Unlock()
	k := staleKey{holder, key}
	old, ok := w.stale[k]
	if !ok || reflect.TypeOf(old) != reflect.TypeOf(obj) {
		return nil
	}
	delete(w.stale, k)
	return old
}

// freeze makes the next cached read of obj by manager i answer obj as
// it is now.
func (w *world) freeze(i int, obj client.Object) {
	w.staleMu.Lock()
	defer w.staleMu.Unlock()
	if w.stale == nil {
		w.stale = map[staleKey]client.Object{}
	}
	w.stale[staleKey{w.managers[i].holder, client.ObjectKeyFromObject(obj)}] = obj
}
