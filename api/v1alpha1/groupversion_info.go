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

// Package v1alpha1 contains the v1alpha1 API of the payments.idempotency.dev
// group: PaymentJob, one payment to be made exactly once, and PaymentProvider,
// the payment service that PaymentJobs charge through.
// +kubebuilder:object:generate=true
// +groupName=payments.idempotency.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the objects in this package.
	GroupVersion = schema.GroupVersion{Group: "payments.idempotency.dev", Version: "v1alpha1"}

	// SchemeBuilder adds the types of this package to a runtime.Scheme.
	SchemeBuilder = &Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this package to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Builder collects the types of one group version and adds them to a
// runtime.Scheme. It has the Register and AddToScheme of controller-runtime's
// scheme.Builder on apimachinery alone, so that a module importing these
// types needs no controller-runtime (api/go.mod: the types' module graph).
// +kubebuilder:object:generate=false
type Builder struct {
	// GroupVersion is the group and version the types are registered in.
	GroupVersion schema.GroupVersion
	funcs        runtime.SchemeBuilder
}

// Register adds objects to the types the Builder registers, with the
// metav1 options, list and watch types of their group version.
func (b *Builder) Register(objects ...runtime.Object) *Builder {
	b.funcs.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(b.GroupVersion, objects...)
		metav1.AddToGroupVersion(s, b.GroupVersion)
		return nil
	})
	return b
}

// AddToScheme adds every registered type to s.
func (b *Builder) AddToScheme(s *runtime.Scheme) error {
	return b.funcs.AddToScheme(s)
}
