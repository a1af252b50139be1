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

package engine

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// jobsKind is a kind of PaymentJobs of which only the objects and lists
// matter: the engine maps a provider to the unfinished objects of its kind.
type jobsKind struct{}

func (jobsKind) Describe() Description[*paymentsv1alpha1.PaymentJob] {
	return Description[*paymentsv1alpha1.PaymentJob]{Name: "PaymentJob",
		New:     func() *paymentsv1alpha1.PaymentJob { return &paymentsv1alpha1.PaymentJob{} },
		NewList: func() client.ObjectList { return &paymentsv1alpha1.PaymentJobList{} }}
}
func (jobsKind) Terms(*paymentsv1alpha1.PaymentJob) Terms             { return Terms{} }
func (jobsKind) Key(*paymentsv1alpha1.PaymentJob, string) string      { return "" }
func (jobsKind) Request(*paymentsv1alpha1.PaymentJob, string) Request { return Request{} }
func (jobsKind) Connect(context.Context, *paymentsv1alpha1.PaymentJob, *Target) (Client, error) {
	return nil, errors.New("a kind of lists only")
}

func TestUsersOfMapsByIndexAndFilter(t *testing.T) {
	g := NewWithT(t)
	job := func(name, provider string, phase paymentsv1alpha1.PaymentJobPhase) *paymentsv1alpha1.PaymentJob {
		return &paymentsv1alpha1.PaymentJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: "billing", Name: name},
			Spec:       paymentsv1alpha1.PaymentJobSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: provider}},
			Status:     paymentsv1alpha1.PaymentJobStatus{PaymentStatus: paymentsv1alpha1.PaymentStatus{Phase: phase}},
		}
	}
	scheme := runtime.NewScheme()
	g.Expect(paymentsv1alpha1.AddToScheme(scheme)).To(Succeed())
	b := fake.NewClientBuilder().WithScheme(scheme)
	for _, ix := range FieldIndexes() {
		b = b.WithIndex(ix.Object, ix.Field, ix.Extract)
	}
	c := b.WithObjects(job("waiting", "stripe", paymentsv1alpha1.PhasePending), job("charging", "stripe", paymentsv1alpha1.PhaseProcessing),
		job("paid", "stripe", paymentsv1alpha1.PhaseCompleted), job("elsewhere", "other", paymentsv1alpha1.PhasePending)).
		Build()
	r := &Reconciler{Kind: NewKind[*paymentsv1alpha1.PaymentJob](jobsKind{}), Client: c}
	provider := &paymentsv1alpha1.PaymentProvider{ObjectMeta: metav1.ObjectMeta{Namespace: "billing", Name: "stripe"}}

	reqs := r.waitingFor(context.Background(), provider)
	names := make([]string, 0, len(reqs))
	for _, req := range reqs {
		g.Expect(req.Namespace).To(Equal("billing"))
		names = append(names, req.Name)
	}
	g.Expect(names).To(ConsistOf("waiting", "charging"), "the unfinished jobs of this provider only")

	all := UsersOf(context.Background(), c, &paymentsv1alpha1.PaymentJobList{}, ProviderRefIndex, provider, nil)
	g.Expect(all).To(HaveLen(3), "nil keeps every job that names the provider")
}
