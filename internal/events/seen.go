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

package events

// Each event id handled once: a bounded memory of the ids seen lately.

import (
	"container/list"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// DefaultRemember is how long an event id is remembered: Stripe retries an
// event it could not deliver for up to three days.
const DefaultRemember = 72 * time.Hour

// DefaultRememberPerProvider is how many event ids are remembered per
// provider; the oldest is forgotten first.
const DefaultRememberPerProvider = 20000

// seenIDs remembers the event ids handled per provider, each for ttl and
// at most perProvider of them, the oldest forgotten first.
type seenIDs struct {
	ttl         time.Duration
	perProvider int

	mu        sync.Mutex
	providers map[types.NamespacedName]*idList
}

// idList is one provider's ids, newest at the front.
type idList struct {
	order *list.List // of seenID
	byID  map[string]*list.Element
}

type seenID struct {
	id   string
	seen time.Time
}

// first records id for provider at now and reports whether it was not
// seen within ttl before.
func (s *seenIDs) first(provider types.NamespacedName, id string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.providers == nil {
		s.providers = map[types.NamespacedName]*idList{}
	}
	l := s.providers[provider]
	if l == nil {
		l = &idList{order: list.New(), byID: map[string]*list.Element{}}
		s.providers[provider] = l
	}
	// Forget what expired, oldest first.
	for back := l.order.Back(); back != nil && now.Sub(back.Value.(seenID).seen) >= s.ttl; back = l.order.Back() {
		delete(l.byID, back.Value.(seenID).id)
		l.order.Remove(back)
	}
	if _, ok := l.byID[id]; ok {
		return false
	}
	l.byID[id] = l.order.PushFront(seenID{id: id, seen: now})
	if l.order.Len() > s.perProvider {
		back := l.order.Back()
		delete(l.byID, back.Value.(seenID).id)
		l.order.Remove(back)
	}
	return true
}
