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
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// The /_sandbox routes: counters, faults, the key memory, the lookup switch
// and the refund controls, for tests and tools. They need no API key.

// forgetKeys forgets every decided idempotency key.
func (s *server) forgetKeys(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Forgotten int `json:"forgotten"`
	}{s.engine.ForgetKeys()})
}

// lookupBody is GET and PUT /_sandbox/lookup.
type lookupBody struct {
	// Enabled is whether search and lookups are answered; required in a PUT.
	Enabled *bool `json:"enabled"`
}

// getLookup answers whether search and lookups are on.
func (s *server) getLookup(w http.ResponseWriter, _ *http.Request) {
	on := s.engine.LookupEnabled()
	writeJSON(w, http.StatusOK, lookupBody{Enabled: &on})
}

// putLookup turns search and lookups on or off (Engine.SetLookupEnabled).
func (s *server) putLookup(w http.ResponseWriter, r *http.Request) {
	var body lookupBody
	if !decodeControl(w, r, &body, "lookup") {
		return
	}
	if body.Enabled == nil {
		writeError(w, http.StatusBadRequest, apiErrorBody{Type: ErrorTypeInvalidRequest, Message: "Invalid lookup: enabled is required"})
		return
	}
	s.engine.SetLookupEnabled(*body.Enabled)
	s.getLookup(w, r)
}

// decodeControl reads the single JSON value of a control request into v,
// refusing unknown fields; it answers 400 (413 for a body too large) and
// returns false when it cannot.
func decodeControl(w http.ResponseWriter, r *http.Request, v any, what string) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("the body holds more than one JSON value")
	}
	if err != nil {
		status := http.StatusBadRequest
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			status = http.StatusRequestEntityTooLarge
		}
		writeError(w, status, apiErrorBody{Type: ErrorTypeInvalidRequest, Message: "Invalid " + what + ": " + err.Error()})
		return false
	}
	return true
}

// getStats answers the Engine's counters and account.
func (s *server) getStats(w http.ResponseWriter, _ *http.Request) {
	st := s.engine.Stats()
	writeJSON(w, http.StatusOK, statsBody{
		Account:           s.engine.Account(),
		Requests:          st.Requests,
		Charges:           st.Charges,
		Replays:           st.Replays,
		InFlightConflicts: st.InFlightConflicts,
		Declines:          st.Declines,
		RequiresAction:    st.RequiresAction,
		Cancels:           st.Cancels,
		KeyReusedErrors:   st.KeyReusedErrors,
		InvalidRequests:   st.InvalidRequests,
		Faults:            st.Faults,
		RateLimited:       st.RateLimited,
		Searches:          st.Searches,
		Retrieves:         st.Retrieves,
		Reads:             st.Reads,
		Lists:             st.Lists,
		KeysForgotten:     st.KeysForgotten,
		ChargesByKey:      st.ChargesByKey,
		RefundRequests:    st.RefundRequests,
		Refunds:           st.Refunds,
		RefundsFailed:     st.RefundsFailed,
		RefundRefusals:    st.RefundRefusals,
		RefundsByKey:      st.RefundsByKey,
		Debits:            st.Debits,
		DebitsSettled:     st.DebitsSettled,
		DebitsFailed:      st.DebitsFailed,
	})
}

// getFaults answers the random faults in force.
func (s *server) getFaults(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, faultsBodyOf(s.engine.Faults()))
}

// putFaults replaces the random faults; the fields left out are zero.
func (s *server) putFaults(w http.ResponseWriter, r *http.Request) {
	var body faultsBody
	if !decodeControl(w, r, &body, "faults") {
		return
	}
	f, err := body.faults()
	if err == nil {
		err = s.engine.SetFaults(f)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, apiErrorBody{Type: ErrorTypeInvalidRequest, Message: err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, faultsBodyOf(s.engine.Faults()))
}

// statsBody is Stats in JSON.
type statsBody struct {
	Account           string         `json:"account"`
	Requests          int64          `json:"requests"`
	Charges           int64          `json:"charges"`
	Replays           int64          `json:"replays"`
	InFlightConflicts int64          `json:"inFlightConflicts"`
	Declines          int64          `json:"declines"`
	RequiresAction    int64          `json:"requiresAction"`
	Cancels           int64          `json:"cancels"`
	KeyReusedErrors   int64          `json:"keyReusedErrors"`
	InvalidRequests   int64          `json:"invalidRequests"`
	Faults            int64          `json:"faults"`
	RateLimited       int64          `json:"rateLimited"`
	Searches          int64          `json:"searches"`
	Retrieves         int64          `json:"retrieves"`
	Reads             int64          `json:"reads"`
	Lists             int64          `json:"lists"`
	KeysForgotten     int64          `json:"keysForgotten"`
	ChargesByKey      map[string]int `json:"chargesByKey"`
	RefundRequests    int64          `json:"refundRequests"`
	Refunds           int64          `json:"refunds"`
	RefundsFailed     int64          `json:"refundsFailed"`
	RefundRefusals    int64          `json:"refundRefusals"`
	RefundsByKey      map[string]int `json:"refundsByKey"`
	Debits            int64          `json:"debits"`
	DebitsSettled     int64          `json:"debitsSettled"`
	DebitsFailed      int64          `json:"debitsFailed"`
}

// faultsBody is Faults in JSON, with durations as Go duration strings.
type faultsBody struct {
	ErrorBeforeCommit float64 `json:"errorBeforeCommit"`
	ErrorAfterCommit  float64 `json:"errorAfterCommit"`
	RateLimit         float64 `json:"rateLimit"`
	RetryAfter        string  `json:"retryAfter"`
	LatencyMin        string  `json:"latencyMin"`
	LatencyMax        string  `json:"latencyMax"`
}

// faultsBodyOf is the JSON of f.
func faultsBodyOf(f Faults) faultsBody {
	return faultsBody{
		ErrorBeforeCommit: f.ErrorBeforeCommit,
		ErrorAfterCommit:  f.ErrorAfterCommit,
		RateLimit:         f.RateLimit,
		RetryAfter:        f.RetryAfter.String(),
		LatencyMin:        f.LatencyMin.String(),
		LatencyMax:        f.LatencyMax.String(),
	}
}

// faults parses the durations; an empty one is zero. The Engine checks the
// ranges.
func (b faultsBody) faults() (Faults, error) {
	f := Faults{
		ErrorBeforeCommit: b.ErrorBeforeCommit,
		ErrorAfterCommit:  b.ErrorAfterCommit,
		RateLimit:         b.RateLimit,
	}
	for _, d := range []struct {
		name  string
		value string
		into  *time.Duration
	}{
		{"retryAfter", b.RetryAfter, &f.RetryAfter},
		{"latencyMin", b.LatencyMin, &f.LatencyMin},
		{"latencyMax", b.LatencyMax, &f.LatencyMax},
	} {
		if d.value == "" {
			continue
		}
		v, err := time.ParseDuration(d.value)
		if err != nil {
			return Faults{}, fmt.Errorf("invalid %s: %w", d.name, err)
		}
		*d.into = v
	}
	return f, nil
}
