//go:build e2e

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

package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// TestSecretNeverLeaks looks for the scenarios' Stripe key in every manager
// log of the run, every PaymentJob and PaymentProvider, and every Event of
// the scenarios' namespaces. Run alone, it first runs a small faulty
// workload of its own to have something to inspect. It is in a file of its
// own, named to sort last, because go test runs the tests of a package in
// the order of their files: it must come after every scenario.
func TestSecretNeverLeaks(t *testing.T) {
	g := NewWithT(t)
	suite.mu.Lock()
	logs, namespaces := append([]string(nil), suite.managerLogs...), append([]string(nil), suite.namespaces...)
	suite.mu.Unlock()
	if len(logs) == 0 {
		s := newScenario(t, "secret-leak", "--error-after-commit=0.3", "--rate-limit=0.1")
		m := s.startManager(managerOptions{logLevel: "debug"})
		s.createJobs(s.planJobs(60, nil))
		s.verify()
		m.Stop(10 * time.Second)
		suite.mu.Lock()
		logs, namespaces = append([]string(nil), suite.managerLogs...), append([]string(nil), suite.namespaces...)
		suite.mu.Unlock()
	}

	needles := []string{suite.secretValue, base64.StdEncoding.EncodeToString([]byte(suite.secretValue))}
	leaks := func(what string, data []byte) {
		for _, n := range needles {
			g.Expect(strings.Contains(string(data), n)).To(BeFalse(), "the secret value appears in %s", what)
		}
	}
	var logBytes int
	for _, path := range logs {
		data, err := os.ReadFile(path)
		g.Expect(err).NotTo(HaveOccurred())
		logBytes += len(data)
		leaks(path, data)
	}

	ctx := context.Background()
	var jobs, providers, events int
	for _, ns := range namespaces {
		lists := []client.ObjectList{
			&paymentsv1alpha1.PaymentJobList{}, &paymentsv1alpha1.PaymentProviderList{},
			&corev1.EventList{}, &eventsv1.EventList{},
		}
		for _, l := range lists {
			g.Expect(suite.k8s.List(ctx, l, client.InNamespace(ns))).To(Succeed())
			data, err := json.Marshal(l)
			g.Expect(err).NotTo(HaveOccurred())
			leaks(fmt.Sprintf("a %T of namespace %s", l, ns), data)
		}
		jobs += len(lists[0].(*paymentsv1alpha1.PaymentJobList).Items)
		providers += len(lists[1].(*paymentsv1alpha1.PaymentProviderList).Items)
		events += len(lists[2].(*corev1.EventList).Items)
	}
	t.Logf("the secret value appears in none of %d manager logs (%d bytes), %d PaymentJobs, %d PaymentProviders and %d Events of %d namespaces",
		len(logs), logBytes, jobs, providers, events, len(namespaces))
	g.Expect(jobs).To(BeNumerically(">", 0))
	g.Expect(events).To(BeNumerically(">", 0))
}
