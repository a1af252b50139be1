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

package sandbox

import (
	"fmt"
	"slices"
)

// This file holds the test hooks that write history: intents made before
// the test under keys the Engine no longer remembers, and the statuses they
// move through afterwards.

// PutIntent stores a copy of in as if it had been created earlier under a
// key the Engine no longer remembers, and returns what it stored. An empty
// ID is given a new one, a zero Created is now by the Engine's clock and an
// empty Status is StatusSucceeded; any other Status is stored as given, so
// that a test can model a status the sandbox does not know. Metadata is
// stored as given: to be found by a lookup, it must hold the entries of
// TaggedRequest. An intent with the same ID is replaced. PutIntent remembers
// no key and counts nothing: the intent is history, not a charge.
func (e *Engine) PutIntent(in Intent) Intent {
	in = in.clone()
	e.mu.Lock()
	defer e.mu.Unlock()
	if in.ID == "" {
		in.ID = e.newID()
	}
	if in.Created.IsZero() {
		in.Created = e.now()
	}
	if in.Status == "" {
		in.Status = StatusSucceeded
	}
	// History: no webhook event.
	e.putIntentLocked(in)
	return in.clone()
}

// SetIntentStatus changes the status of the intent with id, as the provider
// does when a processing payment ends. It returns an error for an unknown
// id, or a status that is not one of the Status constants.
func (e *Engine) SetIntentStatus(id, status string) error {
	if !slices.Contains(statuses, status) {
		return fmt.Errorf("cannot set the status of payment intent %s: unknown status %q", id, status)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	in, ok := e.intents[id]
	if !ok {
		return fmt.Errorf("cannot set the status of payment intent %s: no such payment intent", id)
	}
	in.Status = status
	e.storeIntentLocked(in)
	return nil
}

// DeleteIntent removes the intent with id from the Engine's books, as if
// the provider had lost the charge: it is no longer retrieved, listed,
// searched, refunded or disputed. Its refunds and disputes, books of their
// own, stay; a key saved for it still replays the answer saved. It returns
// an error for an unknown id.
func (e *Engine) DeleteIntent(id string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	in, ok := e.intents[id]
	if !ok {
		return fmt.Errorf("cannot delete payment intent %s: no such payment intent", id)
	}
	e.intentIndex.remove(keyOf(in.Created, in.ID))
	delete(e.intents, id)
	return nil
}
