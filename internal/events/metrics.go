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

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Why a request to the events endpoint was refused: the label reason of
// paymentjob_events_refused_total.
const (
	// ReasonUnsigned: no signature header, or one that cannot be read (401).
	ReasonUnsigned = "unsigned"
	// ReasonBadSignature: no signature matches the provider's secret (401).
	ReasonBadSignature = "bad_signature"
	// ReasonStale: signed, but outside payment.EventTolerance (400).
	ReasonStale = "stale"
	// ReasonOversized: a body larger than payment.MaxEventBytes (413).
	ReasonOversized = "oversized"
	// ReasonMalformed: not POST, or a signed body that is not an event (400
	// or 405).
	ReasonMalformed = "malformed"
	// ReasonForeign: an event for another account or mode (403).
	ReasonForeign = "foreign"
	// ReasonUnknownProvider: no PaymentProvider at the path, or one without
	// spec.events (404).
	ReasonUnknownProvider = "unknown_provider"
	// ReasonUnavailable: the provider's events Secret is missing, not
	// labelled, or empty at its key (503, so the sender retries).
	ReasonUnavailable = "unavailable"
	// ReasonRateLimited: too many refused requests for the provider lately;
	// answered 429 without reading the body.
	ReasonRateLimited = "rate_limited"
)

// What became of an accepted event: the label result of
// paymentjob_events_received_total.
const (
	// ResultWoken: the event woke at least one object.
	ResultWoken = "woken"
	// ResultUnmatched: the event names no object of the provider's
	// namespace (a payment made outside the operator, or already deleted).
	ResultUnmatched = "unmatched"
	// ResultCoalesced: the objects were woken a moment ago; they are woken
	// once more at the end of the coalescing window, for all such events.
	ResultCoalesced = "coalesced"
	// ResultIgnored: a type that names no object the operator keeps.
	ResultIgnored = "ignored"
	// ResultDuplicate: an event id this process handled before.
	ResultDuplicate = "duplicate"
)

var (
	eventsRefusedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "paymentjob_events_refused_total",
		Help: "Requests to the events endpoint refused, by reason: unsigned, bad_signature, stale, oversized, malformed, foreign, unknown_provider, unavailable, rate_limited."},
		[]string{"reason"})
	eventsReceivedTotal = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "paymentjob_events_received_total",
		Help: "Signed provider events accepted, by result: woken, unmatched, coalesced, ignored, duplicate."},
		[]string{"result"})
)

// Collectors returns every collector this package registers in
// controller-runtime's metrics registry.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{eventsRefusedTotal, eventsReceivedTotal}
}

func init() {
	metrics.Registry.MustRegister(Collectors()...)
}
