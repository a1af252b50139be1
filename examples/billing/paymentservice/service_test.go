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

package paymentservice_test

import (
	"net/http/httptest"
	"testing"

	"github.com/idempotency-dev/paymentjob-operator/pkg/providertest"

	"example.com/billing/paymentservice"
)

// docs:start conformance
func TestHonoursTheHTTPContract(t *testing.T) {
	server := httptest.NewServer(&paymentservice.Service{Token: "test-token"}) // on 127.0.0.1
	defer server.Close()
	providertest.Run(t, providertest.Options{
		URL:       server.URL + "/charges",
		LookupURL: server.URL + "/charges/lookup",
		Token:     "test-token",
		InFlight:  &providertest.InFlight{PaymentMethod: "pm_card_slow"},
	})
}

// docs:end conformance
