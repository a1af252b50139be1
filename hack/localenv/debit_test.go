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

package main

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

// The sandbox of make demo signs its events with the whsec_ secret of the
// Secret that the samples' PaymentProvider payments-demo/sandbox names in
// spec.events; a sample without it fails to start rather than sending
// events the manager refuses.
func TestDemoSignsEventsWithTheSamplesSecret(t *testing.T) {
	g := NewWithT(t)
	name, secret, err := webhookSecret(filepath.Join("..", ".."))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(name).To(Equal("sandbox-webhook"))
	g.Expect(secret).To(HavePrefix("whsec_"))

	root := t.TempDir()
	g.Expect(os.MkdirAll(filepath.Join(root, "config", "samples"), 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(root, providerSamples), []byte(`apiVersion: payments.idempotency.dev/v1alpha1
kind: PaymentProvider
metadata: {name: sandbox, namespace: payments-demo}
spec:
  stripe: {secretKeyRef: {name: sandbox-credentials, key: apiKey}}
`), 0o600)).To(Succeed())
	_, _, err = webhookSecret(root)
	g.Expect(err).To(MatchError("config/samples/sandbox_provider.yaml: PaymentProvider payments-demo/sandbox has no spec.events.secretRef"))
}
