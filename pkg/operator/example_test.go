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

package operator_test

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/pkg/operator"
)

// The operator in a manager of your own, as cmd/main.go runs it: the cache
// options first, then Setup, then the manager's Start. (It needs an API
// server at the address, so it is compiled, not run; pkg/paymentjobtest
// runs the same with a control plane.)
func Example() {
	scheme := runtime.NewScheme()
	_ = paymentsv1alpha1.AddToScheme(scheme)
	mgr, err := ctrl.NewManager(&rest.Config{Host: "https://127.0.0.1:6443"}, ctrl.Options{
		Scheme: scheme,
		Cache:  operator.CacheOptions(),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := operator.Setup(mgr, operator.Options{ClaimLease: time.Minute, InsecureProviderHosts: []string{"payments.internal"}}); err != nil {
		fmt.Println(err)
		return
	}
	_ = mgr.Start(ctrl.SetupSignalHandler())
}
