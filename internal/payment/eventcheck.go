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

package payment

import (
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Why a signed provider event is refused, or accepted without waking
// anything. Both adapters' ParseEvent wrap one of these, and the events
// endpoint turns each into its answer and metric reason with errors.Is.
var (
	// ErrEventUnsigned: the request has no signature header, or one that
	// cannot be read (no timestamp, no signature).
	ErrEventUnsigned = errors.New("the event is not signed")
	// ErrEventBadSignature: no signature in the header matches the body
	// and the endpoint secret.
	ErrEventBadSignature = errors.New("the event's signature does not match")
	// ErrEventStale: the signature is valid but its timestamp is further
	// than EventTolerance from the receiver's clock, in the past (a replay)
	// or in the future.
	ErrEventStale = errors.New("the event's timestamp is outside the tolerance")
	// ErrEventMalformed: the signature is valid but the body is not an
	// event the adapter can read, or names no object.
	ErrEventMalformed = errors.New("the event's body is malformed")
	// ErrEventTooLarge: the body is larger than MaxEventBytes.
	ErrEventTooLarge = errors.New("the event's body is too large")
	// ErrEventIgnored: the event is valid and signed, but of a type that
	// names no object the operator keeps; it is accepted and wakes nothing.
	// ParseEvent returns it with the event's ID and Type set.
	ErrEventIgnored = errors.New("the event's type is ignored")
)

// CheckEventTime returns ErrEventStale when signed, the timestamp of a
// signature, is further than EventTolerance from now, in either direction.
func CheckEventTime(signed, now time.Time) error {
	if d := now.Sub(signed); d > EventTolerance || d < -EventTolerance {
		return fmt.Errorf("%w: signed at %s, %s from now", ErrEventStale, signed.UTC().Format(time.RFC3339), d.Round(time.Second))
	}
	return nil
}

// CheckEventSize returns ErrEventTooLarge when body is larger than
// MaxEventBytes.
func CheckEventSize(body []byte) error {
	if len(body) > MaxEventBytes {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrEventTooLarge, len(body), MaxEventBytes)
	}
	return nil
}

// SignatureHeader is a parsed signature header of the form
// "t=<unix seconds>,v1=<hex>[,v1=<hex>...]", the form of Stripe-Signature
// and of the HTTP contract's Paymentjob-Signature. Several v1 signatures
// are sent while an endpoint secret is rotated; other schemes are ignored.
type SignatureHeader struct {
	// Signed is the timestamp the signatures cover.
	Signed time.Time
	// V1 are the decoded v1 signatures.
	V1 [][]byte
}

// ParseSignatureHeader parses header. It wraps ErrEventUnsigned when the
// header is empty or has no valid timestamp or no v1 signature that is hex.
// Its errors never quote the header.
func ParseSignatureHeader(header string) (SignatureHeader, error) {
	if header == "" {
		return SignatureHeader{}, fmt.Errorf("%w: no signature header", ErrEventUnsigned)
	}
	var h SignatureHeader
	seenT := false
	for _, pair := range strings.Split(header, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok {
			return SignatureHeader{}, fmt.Errorf("%w: the signature header is malformed", ErrEventUnsigned)
		}
		switch name {
		case "t":
			secs, err := strconv.ParseInt(value, 10, 64)
			if err != nil || seenT {
				return SignatureHeader{}, fmt.Errorf("%w: the signature header's timestamp is malformed", ErrEventUnsigned)
			}
			seenT = true
			h.Signed = time.Unix(secs, 0)
		case "v1":
			if sig, err := hex.DecodeString(value); err == nil && len(sig) > 0 {
				h.V1 = append(h.V1, sig)
			}
		}
	}
	switch {
	case !seenT:
		return SignatureHeader{}, fmt.Errorf("%w: the signature header has no timestamp", ErrEventUnsigned)
	case len(h.V1) == 0:
		return SignatureHeader{}, fmt.Errorf("%w: the signature header has no v1 signature", ErrEventUnsigned)
	}
	return h, nil
}
