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

package engine_test

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentjob"
)

// A job keeps sending the key it was claimed with: the scope comes from
// status.provider, or, where a version that does not know scopes erased it
// (a rollback), from the key recorded in the status.
func TestClaimedScope(t *testing.T) {
	long := strings.Repeat("x", 300)
	tests := []struct {
		name     string
		key      string // spec.idempotencyKey
		provider *paymentsv1alpha1.ProviderIdentity
		recorded func(job *paymentsv1alpha1.PaymentJob) string
		want     string
	}{
		{name: "never claimed", want: ""},
		{name: "claimed without a scope", provider: &paymentsv1alpha1.ProviderIdentity{UID: "u"},
			recorded: func(j *paymentsv1alpha1.PaymentJob) string { return paymentjob.Kind().Key(j, "") }, want: ""},
		{name: "the scope in status.provider", provider: &paymentsv1alpha1.ProviderIdentity{UID: "u", KeyScope: "live"},
			recorded: func(j *paymentsv1alpha1.PaymentJob) string { return paymentjob.Kind().Key(j, "live") }, want: "live"},
		{name: "status.provider.keyScope erased by an older version", provider: &paymentsv1alpha1.ProviderIdentity{UID: "u"},
			recorded: func(j *paymentsv1alpha1.PaymentJob) string { return paymentjob.Kind().Key(j, "live") }, want: "live"},
		{name: "erased, with a hashed key", key: long, provider: &paymentsv1alpha1.ProviderIdentity{UID: "u"},
			recorded: func(j *paymentsv1alpha1.PaymentJob) string { return paymentjob.Kind().Key(j, "tenant-2") }, want: "tenant-2"},
		{name: "a ':' in the key, not in the scope", key: "order:42",
			recorded: func(j *paymentsv1alpha1.PaymentJob) string { return paymentjob.Kind().Key(j, "") }, want: ""},
		{name: "an unscoped hashed key", key: long,
			recorded: func(j *paymentsv1alpha1.PaymentJob) string { return paymentjob.Kind().Key(j, "") }, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			job := &paymentsv1alpha1.PaymentJob{ObjectMeta: metav1.ObjectMeta{Name: "invoice", Namespace: "billing"}}
			job.Spec.IdempotencyKey = tt.key
			job.Status.Provider = tt.provider
			if tt.recorded != nil {
				job.Status.IdempotencyKey = tt.recorded(job)
			}
			g.Expect(engine.ClaimedScope(job)).To(Equal(tt.want))
			if tt.recorded != nil {
				g.Expect(engine.KeyOf(paymentjob.Kind(), job)).To(Equal(job.Status.IdempotencyKey), "the job sends the key it recorded")
				g.Expect((&engine.Reconciler{Kind: paymentjob.Kind()}).CheckRecordedKey(job)).To(BeNil())
			}
		})
	}
}
