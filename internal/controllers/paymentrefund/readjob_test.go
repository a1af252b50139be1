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

package paymentrefund

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// twoViews is a reader with the API server's two views of one PaymentJob:
// its watch cache (resourceVersion "0"), possibly behind, and etcd.
type twoViews struct {
	cached, stored *paymentsv1alpha1.PaymentJob
	// reads lists the resourceVersion of each read ("" for etcd).
	reads []string
}

func (v *twoViews) Get(_ context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	var o client.GetOptions
	o.ApplyOptions(opts)
	rv := ""
	if o.Raw != nil {
		rv = o.Raw.ResourceVersion
	}
	v.reads = append(v.reads, rv)
	job := v.stored
	if rv == "0" {
		job = v.cached
	}
	if job == nil {
		return apierrors.NewNotFound(schema.GroupResource{Group: paymentsv1alpha1.GroupVersion.Group, Resource: "paymentjobs"}, key.Name)
	}
	job.DeepCopyInto(obj.(*paymentsv1alpha1.PaymentJob))
	return nil
}

func (v *twoViews) List(context.Context, client.ObjectList, ...client.ListOption) error {
	panic("a refund lists no PaymentJobs")
}

// TestReadJobTakesOnlyACompletedJobFromTheWatchCache: a Completed job is
// final, so the watch cache's copy is enough (one read, no etcd); any other
// answer of the cache, which may be behind, is read again from etcd.
func TestReadJobTakesOnlyACompletedJobFromTheWatchCache(t *testing.T) {
	key := types.NamespacedName{Namespace: "billing", Name: "invoice"}
	job := func(phase paymentsv1alpha1.PaymentJobPhase) *paymentsv1alpha1.PaymentJob {
		j := &paymentsv1alpha1.PaymentJob{}
		j.Name, j.Namespace = key.Name, key.Namespace
		j.Status.Phase = phase
		return j
	}
	tests := []struct {
		name           string
		cached, stored *paymentsv1alpha1.PaymentJob
		wantReads      []string
		wantPhase      paymentsv1alpha1.PaymentJobPhase
		wantNotFound   bool
	}{
		{name: "Completed in the cache", cached: job(paymentsv1alpha1.PhaseCompleted), stored: job(paymentsv1alpha1.PhaseCompleted),
			wantReads: []string{"0"}, wantPhase: paymentsv1alpha1.PhaseCompleted},
		{name: "the cache is behind a job that completed", cached: job(paymentsv1alpha1.PhaseProcessing), stored: job(paymentsv1alpha1.PhaseCompleted),
			wantReads: []string{"0", ""}, wantPhase: paymentsv1alpha1.PhaseCompleted},
		{name: "the cache has not seen the job yet", stored: job(paymentsv1alpha1.PhasePending),
			wantReads: []string{"0", ""}, wantPhase: paymentsv1alpha1.PhasePending},
		{name: "Failed is read from etcd", cached: job(paymentsv1alpha1.PhaseFailed), stored: job(paymentsv1alpha1.PhaseFailed),
			wantReads: []string{"0", ""}, wantPhase: paymentsv1alpha1.PhaseFailed},
		{name: "gone", cached: job(paymentsv1alpha1.PhaseProcessing),
			wantReads: []string{"0", ""}, wantNotFound: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := &twoViews{cached: tt.cached, stored: tt.stored}
			got, err := readJob(context.Background(), r, key)
			g.Expect(r.reads).To(Equal(tt.wantReads))
			if tt.wantNotFound {
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "got %v", err)
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Status.Phase).To(Equal(tt.wantPhase))
		})
	}
}
