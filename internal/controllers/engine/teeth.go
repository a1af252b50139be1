//go:build campaignteeth

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

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What the broken variants of the engine (internal/teeth) need beyond
// their one line. Built only with the campaignteeth tag; teeth_off.go is
// the shipped build's.

// storedVersion is the resourceVersion the API server holds for obj now,
// read past the cache when the reconciler has an APIReader: a write on it
// has no precondition left (teeth.UnguardedClaim). It is what a write
// without a resourceVersion does on the API server, which
// controller-runtime's fake client refuses for custom resources; "" when
// obj cannot be read.
func (r *Reconciler) storedVersion(ctx context.Context, obj client.Object) string {
	reader := client.Reader(r.Client)
	if r.APIReader != nil {
		reader = r.APIReader
	}
	current := obj.DeepCopyObject().(client.Object)
	if err := reader.Get(ctx, client.ObjectKeyFromObject(obj), current); err != nil {
		return ""
	}
	return current.GetResourceVersion()
}
