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
	"context"
	"fmt"
	"os"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/testing/testenv"
)

// The API contract is proven against the real API server: the CRDs as
// generated into config/crd/bases, served by the self-built kube-apiserver.
var (
	env       *testenv.Env
	k8sClient client.Client
	dc        discovery.DiscoveryInterface
	namespace = "api-contract"
)

func TestMain(m *testing.M) {
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := 1
	if err := setup(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "cannot stop the control plane: %v\n", err)
	}
	os.Exit(code)
}

func setup() error {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := paymentsv1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	var err error
	k8sClient, err = client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("cannot create a client: %w", err)
	}
	dc, err = discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		return fmt.Errorf("cannot create a discovery client: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := k8sClient.Create(context.Background(), ns); err != nil {
		return fmt.Errorf("cannot create namespace %s: %w", namespace, err)
	}
	return nil
}
