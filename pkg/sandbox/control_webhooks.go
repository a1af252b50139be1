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
	"net/http"
	"time"
)

// The /_sandbox routes of bank debits and webhooks.

// debitsBody is GET and PUT /_sandbox/debits.
type debitsBody struct {
	// SettleDelay is a Go duration, such as "200ms"; required in a PUT.
	SettleDelay string `json:"settleDelay"`
}

// getDebitControl answers the debit settle delay.
func (s *server) getDebitControl(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, debitsBody{SettleDelay: s.engine.DebitSettleDelay().String()})
}

// putDebitControl sets the debit settle delay (Engine.SetDebitSettleDelay).
func (s *server) putDebitControl(w http.ResponseWriter, r *http.Request) {
	var body debitsBody
	if !decodeControl(w, r, &body, "debits") {
		return
	}
	d, err := time.ParseDuration(body.SettleDelay)
	if err != nil || d < 0 {
		writeError(w, http.StatusBadRequest, apiErrorBody{Type: ErrorTypeInvalidRequest,
			Message: "Invalid debits: settleDelay must be a duration of 0 or more, such as 200ms"})
		return
	}
	s.engine.SetDebitSettleDelay(d)
	s.getDebitControl(w, r)
}

// webhookFaultsBody is WebhookFaults in JSON, with the delay as a Go
// duration.
type webhookFaultsBody struct {
	WebhookFaults
	Delay string `json:"delay"`
}

// webhooksBody is GET /_sandbox/webhooks: the config without its secret,
// and the counters.
type webhooksBody struct {
	URL       string            `json:"url"`
	Format    WebhookFormat     `json:"format"`
	HasSecret bool              `json:"hasSecret"`
	Seed      uint64            `json:"seed"`
	Faults    webhookFaultsBody `json:"faults"`
	Stats     WebhookStats      `json:"stats"`
}

// webhooksPut is PUT /_sandbox/webhooks: a field left out keeps its value.
type webhooksPut struct {
	URL    *string            `json:"url"`
	Secret *string            `json:"secret"`
	Format *WebhookFormat     `json:"format"`
	Seed   *uint64            `json:"seed"`
	Faults *webhookFaultsBody `json:"faults"`
}

// getWebhooks answers the webhook config, never its secret, and counters.
func (s *server) getWebhooks(w http.ResponseWriter, _ *http.Request) {
	c, hasSecret := s.engine.Webhooks()
	writeJSON(w, http.StatusOK, webhooksBody{
		URL: c.URL, Format: c.Format, HasSecret: hasSecret, Seed: c.Seed,
		Faults: webhookFaultsBody{WebhookFaults: c.Faults, Delay: c.Faults.Delay.String()},
		Stats:  s.engine.WebhookStats(),
	})
}

// putWebhooks changes the webhook config (Engine.SetWebhooks).
func (s *server) putWebhooks(w http.ResponseWriter, r *http.Request) {
	var body webhooksPut
	if !decodeControl(w, r, &body, "webhooks") {
		return
	}
	c := s.engine.webhookConfig()
	if body.URL != nil {
		c.URL = *body.URL
	}
	if body.Secret != nil {
		c.Secret = *body.Secret
	}
	if body.Format != nil {
		c.Format = *body.Format
	}
	if body.Seed != nil {
		c.Seed = *body.Seed
	}
	if body.Faults != nil {
		c.Faults = body.Faults.WebhookFaults
		c.Faults.Delay = 0
		if body.Faults.Delay != "" {
			d, err := time.ParseDuration(body.Faults.Delay)
			if err != nil {
				writeError(w, http.StatusBadRequest, apiErrorBody{Type: ErrorTypeInvalidRequest,
					Message: "Invalid webhooks: faults.delay must be a duration, such as 500ms"})
				return
			}
			c.Faults.Delay = d
		}
	}
	if err := s.engine.SetWebhooks(c); err != nil {
		writeError(w, http.StatusBadRequest, apiErrorBody{Type: ErrorTypeInvalidRequest, Message: "Invalid webhooks: " + err.Error()})
		return
	}
	s.getWebhooks(w, r)
}

// webhookConfig returns the config in force, secret included, for a
// change of part of it.
func (e *Engine) webhookConfig() WebhookConfig {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.hooks == nil {
		return WebhookConfig{}
	}
	return e.hooks.cfg
}
