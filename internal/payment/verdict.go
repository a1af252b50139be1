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

// Action is what a job may do after its key was looked up.
type Action int

const (
	// ActionCharge means nothing found moved or may move money; a new
	// charge may be requested under the key.
	ActionCharge Action = iota
	// ActionRecord means a charge of this request succeeded; record it,
	// never charge again.
	ActionRecord
	// ActionSettle means a charge of this request is not final; settle it
	// by its id and never create another.
	ActionSettle
	// ActionStall means a charge under the key was made for another
	// request; it is not this job's and this job must not charge.
	ActionStall
)

// Verdict is the decision Decide takes on what a lookup found.
type Verdict struct {
	// Action to take.
	Action Action
	// Charge is the charge to record or settle.
	Charge Found
	// Reason explains ActionStall.
	Reason string
}

// Decide turns every charge found under a key into what the job that sends
// the key with the request fingerprint may do:
//
//   - a charge whose fingerprint differs is another request's: stall, unless
//     a charge of this very request succeeded;
//   - a succeeded charge of this request is recorded (the newest);
//   - a pending one is settled (the newest);
//   - charges that ended without moving money, or none, let a new charge go.
//
// A charge without a fingerprint (made before fingerprints were stored)
// counts as this request's when its amount and currency are the request's,
// and as another's otherwise.
func Decide(found []Found, fingerprint string, req ChargeRequest) Verdict {
	var succeeded, pending, other *Found
	for i := range found {
		f := &found[i]
		mine := f.Fingerprint == fingerprint
		if f.Fingerprint == "" {
			mine = f.Amount == req.Amount && f.Currency == req.Currency
		}
		switch {
		case !mine:
			other = newer(other, f)
		case f.State == StateSucceeded:
			succeeded = newer(succeeded, f)
		case f.State == StatePending:
			pending = newer(pending, f)
		}
	}
	switch {
	case succeeded != nil:
		return Verdict{Action: ActionRecord, Charge: *succeeded}
	case other != nil:
		// The reason is shown to whoever can read the job: it names
		// nothing of the other request (its charge, amount or account may
		// be another tenant's); Charge carries the detail for the log.
		return Verdict{Action: ActionStall, Charge: *other, Reason: "a payment under this idempotency key for another " +
			"request exists at the provider; the operator's log names it (ChargeMismatch)"}
	case pending != nil:
		return Verdict{Action: ActionSettle, Charge: *pending}
	}
	return Verdict{Action: ActionCharge}
}

// newer returns the more recently created of a and b; a when they tie.
func newer(a, b *Found) *Found {
	if a == nil || b.Created.After(a.Created) {
		return b
	}
	return a
}
