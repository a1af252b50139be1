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

// Package events serves the endpoint that signed provider events reach:
// POST /events/<namespace>/<provider>, on its own port, off unless the
// manager is given an address (--events-bind-address). Every replica serves
// it. A request is accepted only for a PaymentProvider with spec.events,
// under payment.MaxEventBytes, signed with the provider's endpoint secret
// within payment.EventTolerance, for the account and mode the provider
// reaches; each event id is handled once; an accepted event only wakes the
// objects it names in the provider's namespace, through Waker, and the
// operator reads the provider before it writes anything. See
// docs/security.md for what each refusal answers.
package events

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// PathPrefix is the path under which events are posted:
// PathPrefix + "<namespace>/<provider>".
const PathPrefix = "/events/"

// Defaults of the refusals' token bucket: a provider (and, together, every
// path that names no provider) may cause DefaultRefusalBurst refused
// requests at once and DefaultRefusalsPerSecond after that; beyond it every
// request for it is answered 429 without being read.
const (
	DefaultRefusalsPerSecond rate.Limit = 1
	DefaultRefusalBurst      int        = 20
)

// Timeouts of the server: a sender has ReadTimeout to send its request and
// the server WriteTimeout to answer.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 10 * time.Second
	WriteTimeout      = 10 * time.Second
	IdleTimeout       = 60 * time.Second
	// ShutdownTimeout bounds the wait for requests in flight once the
	// manager stops.
	ShutdownTimeout = 10 * time.Second
	// MaxHeaderBytes bounds a request's headers.
	MaxHeaderBytes = 16 << 10
)

// Waker wakes the objects of provider's namespace that a verified event
// names, and returns how many. It only wakes: the objects read the
// provider before they write anything.
type Waker interface {
	Wake(ctx context.Context, provider types.NamespacedName, ev payment.Event) int
}

// Wakers wake, for one event, what each of them wakes (the reconcilers of
// every kind, the refund watch), and return how many objects in all.
type Wakers []Waker

// Wake calls Wake of each.
func (w Wakers) Wake(ctx context.Context, provider types.NamespacedName, ev payment.Event) int {
	n := 0
	for _, k := range w {
		n += k.Wake(ctx, provider, ev)
	}
	return n
}

// Enabled reports whether addr asks for the events server: "" and "0"
// (the default of --events-bind-address) turn it off.
func Enabled(addr string) bool { return addr != "" && addr != "0" }

// Server is the events endpoint, a controller-runtime manager.Runnable
// that every replica runs (NeedLeaderElection is false). It is also an
// http.Handler. Set its fields before Start; Reader and Waker are required.
type Server struct {
	// Addr is the address to listen on, such as ":9444"; see Enabled.
	Addr string
	// Reader reads PaymentProviders and the Secrets labelled
	// LabelCredentials=true: the manager's cache.
	Reader client.Reader
	// Waker wakes the objects an accepted event names.
	Waker Waker
	// Identities tells the account and mode of a provider, when known, to
	// refuse events for another account; nil checks only a Stripe event's
	// livemode against the mode of the provider's API key.
	Identities Identities
	// Clock is the time signatures are checked against; nil is the real
	// clock.
	Clock clock.WithDelayedExecution
	// Log receives one line per handled event (id, type, provider, result;
	// duplicates and ignored types at V(1)) and, at V(1), one per refusal;
	// never a body, header or secret.
	Log logr.Logger
	// RefusalsPerSecond and RefusalBurst size each provider's token bucket
	// of refused requests; zero is DefaultRefusalsPerSecond and
	// DefaultRefusalBurst.
	RefusalsPerSecond rate.Limit
	RefusalBurst      int
	// CoalesceWindow is how long after a wake further events for the same
	// objects wait to wake them once more; zero is DefaultCoalesceWindow.
	CoalesceWindow time.Duration
	// Remember and RememberPerProvider bound the memory of handled event
	// ids; zero is DefaultRemember and DefaultRememberPerProvider.
	Remember            time.Duration
	RememberPerProvider int

	once     sync.Once
	seen     seenIDs
	wakes    coalescer
	mu       sync.Mutex
	limiters map[types.NamespacedName]*rate.Limiter
	baseCtx  context.Context
	addr     string
}

// NeedLeaderElection is false: every replica serves events, so that any
// replica an ingress picks can wake the objects.
func (s *Server) NeedLeaderElection() bool { return false }

// init applies the defaults.
func (s *Server) init() {
	s.once.Do(func() {
		if s.Clock == nil {
			s.Clock = clock.RealClock{}
		}
		if s.RefusalsPerSecond == 0 {
			s.RefusalsPerSecond = DefaultRefusalsPerSecond
		}
		if s.RefusalBurst == 0 {
			s.RefusalBurst = DefaultRefusalBurst
		}
		if s.CoalesceWindow == 0 {
			s.CoalesceWindow = DefaultCoalesceWindow
		}
		s.seen = seenIDs{ttl: s.Remember, perProvider: s.RememberPerProvider}
		if s.seen.ttl == 0 {
			s.seen.ttl = DefaultRemember
		}
		if s.seen.perProvider == 0 {
			s.seen.perProvider = DefaultRememberPerProvider
		}
		s.wakes = coalescer{waker: s.Waker, clock: s.Clock, window: s.CoalesceWindow}
		s.limiters = map[types.NamespacedName]*rate.Limiter{}
	})
}

// Start serves until ctx ends, then stops accepting requests and waits up
// to ShutdownTimeout for those in flight. It returns at once, serving
// nothing, when Addr does not ask for the server.
func (s *Server) Start(ctx context.Context) error {
	if !Enabled(s.Addr) {
		return nil
	}
	if s.Reader == nil || s.Waker == nil {
		return errors.New("cannot serve provider events: the server needs a Reader and a Waker")
	}
	s.init()
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("cannot serve provider events: %w", err)
	}
	s.mu.Lock()
	s.baseCtx, s.addr = ctx, ln.Addr().String()
	s.mu.Unlock()
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	s.Log.Info("Serving provider events", "address", s.addr)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return fmt.Errorf("cannot serve provider events: %w", err)
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return fmt.Errorf("cannot stop serving provider events: %w", err)
	}
	return nil
}

// Address is the address the server listens on once Start has bound it,
// and "" before.
func (s *Server) Address() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr
}

// context is the context wakes run in: Start's, or Background when the
// server is used as a handler only.
func (s *Server) context() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.baseCtx == nil {
		return context.Background()
	}
	return s.baseCtx
}

// unknown is the token bucket that the paths naming no provider share.
var unknown = types.NamespacedName{}

// limiter is the token bucket of the refusals for provider.
func (s *Server) limiter(provider types.NamespacedName) *rate.Limiter {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.limiters[provider]
	if l == nil {
		l = rate.NewLimiter(s.RefusalsPerSecond, s.RefusalBurst)
		s.limiters[provider] = l
	}
	return l
}

// providerOf reads the namespace and name of the path; false when the path
// cannot name a PaymentProvider.
func providerOf(path string) (types.NamespacedName, bool) {
	rest, ok := strings.CutPrefix(path, PathPrefix)
	if !ok {
		return types.NamespacedName{}, false
	}
	namespace, name, ok := strings.Cut(rest, "/")
	if !ok || len(validation.IsDNS1123Label(namespace)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: namespace, Name: name}, true
}

// readBody reads r's body up to payment.MaxEventBytes; ErrEventTooLarge
// beyond.
func readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength > payment.MaxEventBytes {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", payment.ErrEventTooLarge, r.ContentLength, payment.MaxEventBytes)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, payment.MaxEventBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: cannot read the body", payment.ErrEventMalformed)
	}
	if err := payment.CheckEventSize(body); err != nil {
		return nil, err
	}
	return body, nil
}
