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

package v1alpha1_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// TestMalformedManifestsAreRejected sends raw, hostile PaymentJob bodies, as
// JSON and as YAML, straight to the API server: each is refused with a message
// that names the field, and nothing is stored.
func TestMalformedManifestsAreRejected(t *testing.T) {
	const header = `{"apiVersion":"payments.idempotency.dev/v1alpha1","kind":"PaymentJob","metadata":{"name":"hostile-%d"},`
	valid := `"providerRef":{"name":"stripe"},"amount":2000,"currency":"usd"`
	tests := []struct {
		name        string
		contentType string
		body        string
		want        []string
	}{
		{"amount as a string", "json", `"spec":{"providerRef":{"name":"stripe"},"amount":"2000","currency":"usd"}}`,
			[]string{"spec.amount", "integer"}},
		{"amount as a float", "json", `"spec":{"providerRef":{"name":"stripe"},"amount":20.5,"currency":"usd"}}`,
			[]string{"spec.amount"}},
		{"amount beyond int64", "json", `"spec":{"providerRef":{"name":"stripe"},"amount":9223372036854775808,"currency":"usd"}}`,
			[]string{"amount"}},
		{"currency as a number", "json", `"spec":{"providerRef":{"name":"stripe"},"amount":2000,"currency":840}}`,
			[]string{"spec.currency", "string"}},
		{"metadata as a list", "json", `"spec":{` + valid + `,"metadata":["invoice","42"]}}`,
			[]string{"spec.metadata", "object"}},
		{"metadata value as a number", "json", `"spec":{` + valid + `,"metadata":{"invoice":42}}}`,
			[]string{"spec.metadata.invoice", "string"}},
		{"providerRef as a string", "json", `"spec":{"providerRef":"stripe","amount":2000,"currency":"usd"}}`,
			[]string{"spec.providerRef", "object"}},
		{"spec as a list", "json", `"spec":[1,2,3]}`,
			[]string{"spec", "object"}},
		{"spec missing", "json", `"status":{"phase":"Completed"}}`,
			[]string{"spec", "Required value"}},
		{"duplicate field", "json", `"spec":{` + valid + `,"amount":1}}`,
			[]string{"duplicate field", "amount"}},
		{"unknown field", "json", `"spec":{` + valid + `,"cardNumber":"4242424242424242"}}`,
			[]string{"unknown field", "spec.cardNumber"}},
		{"key with non-ASCII letters", "json", `"spec":{` + valid + `,"idempotencyKey":"счёт-42"}}`,
			[]string{"spec.idempotencyKey"}},
		{"key with a newline", "json", `"spec":{` + valid + `,"idempotencyKey":"a\nb"}}`,
			[]string{"spec.idempotencyKey"}},
		{"truncated JSON", "json", `"spec":{"providerRef":{"name":"str`,
			[]string{"unexpected end of JSON input"}},
		{"YAML with a string amount", "yaml", "apiVersion: payments.idempotency.dev/v1alpha1\nkind: PaymentJob\nmetadata: {name: hostile-%d}\nspec:\n  providerRef: {name: stripe}\n  amount: twenty\n  currency: usd\n",
			[]string{"spec.amount", "integer"}},
		{"YAML with a negative amount", "yaml", "apiVersion: payments.idempotency.dev/v1alpha1\nkind: PaymentJob\nmetadata: {name: hostile-%d}\nspec:\n  providerRef: {name: stripe}\n  amount: -1\n  currency: usd\n",
			[]string{"spec.amount", "greater than or equal to 1"}},
		{"YAML that does not parse", "yaml", "apiVersion: payments.idempotency.dev/v1alpha1\nkind: PaymentJob\nmetadata: {name: hostile-%d\nspec: [\n",
			[]string{"yaml"}},
		{"a 4 MiB description", "json", `"spec":{` + valid + `,"description":"` + strings.Repeat("d", 4<<20) + `"}}`,
			[]string{"too large"}},
	}

	httpClient, err := rest.HTTPClientFor(env.Config)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	url := fmt.Sprintf("%s/apis/%s/namespaces/%s/paymentjobs?fieldValidation=Strict",
		strings.TrimSuffix(env.Config.Host, "/"), paymentsv1alpha1.GroupVersion.String(), namespace)

	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			body := fmt.Sprintf(header, i) + tt.body
			contentType := "application/json"
			if tt.contentType == "yaml" {
				body = fmt.Sprintf(tt.body, i)
				contentType = "application/yaml"
			}
			req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, bytes.NewBufferString(body))
			g.Expect(err).NotTo(HaveOccurred())
			req.Header.Set("Content-Type", contentType)
			resp, err := httpClient.Do(req)
			g.Expect(err).NotTo(HaveOccurred())
			defer resp.Body.Close()
			answer, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			g.Expect(err).NotTo(HaveOccurred())

			g.Expect(resp.StatusCode).To(BeNumerically(">=", 400), "accepted: %s", answer)
			g.Expect(resp.StatusCode).To(BeNumerically("<", 500), "the API server failed instead of refusing: %s", answer)
			for _, want := range tt.want {
				g.Expect(string(answer)).To(ContainSubstring(want))
			}

			// Nothing was stored.
			get, err := http.NewRequestWithContext(context.Background(), http.MethodGet,
				strings.Replace(url, "?fieldValidation=Strict", fmt.Sprintf("/hostile-%d", i), 1), nil)
			g.Expect(err).NotTo(HaveOccurred())
			got, err := httpClient.Do(get)
			g.Expect(err).NotTo(HaveOccurred())
			got.Body.Close()
			g.Expect(got.StatusCode).To(Equal(http.StatusNotFound))
		})
	}
}
