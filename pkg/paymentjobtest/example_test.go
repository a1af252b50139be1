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

package paymentjobtest_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/paymentjobtest"
)

// A job charged through the sandbox, and one whose answer was lost after
// the charge: the retry is a replay, not a second charge. (env is the
// package's environment, started in TestMain with paymentjobtest.Start.)
func Example() {
	ctx := context.Background()
	c := env.Client()
	_ = c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "example"}})
	if err := env.CreateProvider(ctx, "example", "stripe"); err != nil {
		fmt.Println(err)
		return
	}
	env.Faults().LoseResponses(1)
	_ = c.Create(ctx, &paymentsv1alpha1.PaymentJob{
		ObjectMeta: metav1.ObjectMeta{Name: "invoice-42", Namespace: "example"},
		Spec: paymentsv1alpha1.PaymentJobSpec{ProviderRef: paymentsv1alpha1.ProviderReference{Name: "stripe"},
			Amount: 2000, Currency: "usd", PaymentMethod: paymentjobtest.PaymentMethodSucceeds},
	})
	job, err := env.WaitForPhase(ctx, "example", "invoice-42", paymentsv1alpha1.PhaseCompleted, time.Minute)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(job.Status.Phase, "replayed:", job.Status.ProviderResponse.Replayed, "charges:", env.Charges("example/invoice-42"))
	// Output: Completed replayed: true charges: 1
}
