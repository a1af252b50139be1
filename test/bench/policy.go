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
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/yaml"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// The admission policies of config/policy are part of the deployment
// (config/default installs them with the operator), and one of them saves a
// write per job: it adds the finalizer at create. The benchmark installs
// every one, as the deployment does, before the first phase, so that the
// baseline and the operator pay for their evaluation alike.

const (
	// nsPolicy is the scratch namespace of the check that the policies are
	// served.
	nsPolicy = "bench-policy"
	// policyWait bounds the wait for the API server to serve a new policy
	// (it does within seconds).
	policyWait = 30 * time.Second
)

// notObjects are the files of config/policy that are kustomize's, not the
// API server's.
var notObjects = []string{"kustomization.yaml", "kustomizeconfig.yaml"}

// readPolicies returns the objects of every *.yaml file of dir, in file
// order, skipping kustomize's files.
func readPolicies(dir string) ([]*unstructured.Unstructured, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var objs []*unstructured.Unstructured
	for _, f := range files {
		if slices.Contains(notObjects, filepath.Base(f)) {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("cannot read the policies: %w", err)
		}
		docs, err := parseObjects(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		objs = append(objs, docs...)
	}
	if len(objs) == 0 {
		return nil, fmt.Errorf("no admission policy in %s (-policies)", dir)
	}
	return objs, nil
}

// parseObjects parses a multi-document YAML file; documents holding only
// comments are skipped, and every other one must have an apiVersion, a kind
// and a name.
func parseObjects(data []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			return nil, err
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetAPIVersion() == "" || u.GetKind() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("a document without apiVersion, kind or metadata.name: %.80q", doc)
		}
		objs = append(objs, u)
	}
}

// installPolicies creates the admission policies of dir and waits until the
// API server adds the finalizer to a new PaymentJob; it returns their
// names, "Kind/name".
func (c *cluster) installPolicies(ctx context.Context, dir string) ([]string, error) {
	objs, err := readPolicies(dir)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(objs))
	for _, u := range objs {
		if err := c.creator.Create(ctx, u); err != nil {
			return nil, fmt.Errorf("cannot create %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		names = append(names, u.GetKind()+"/"+u.GetName())
	}
	if err := c.setupNamespace(ctx, nsPolicy, nil); err != nil {
		return nil, err
	}
	return names, c.waitFinalizerAtCreate(ctx, policyWait)
}

// waitFinalizerAtCreate creates throwaway PaymentJobs in the scratch
// namespace, as dry runs (admission runs, nothing is stored), until one
// comes back with the finalizer, at most for timeout.
func (c *cluster) waitFinalizerAtCreate(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for i := 0; ; i++ {
		job := newJob(nsPolicy, i)
		// Until the API server has the CRD's schema for the policy's
		// apply configuration, a create is refused ("Resource kind ... not
		// found"): retried like a create without the finalizer.
		err := c.creator.Create(ctx, job, client.DryRunAll)
		if err == nil && controllerutil.ContainsFinalizer(job, paymentsv1alpha1.Finalizer) {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("cannot create a throwaway job in %s %s after installing the policies: %w", nsPolicy, timeout, err)
			}
			return fmt.Errorf("a PaymentJob created %s after installing the policies still has no finalizer %s (finalizers %v): "+
				"is the MutatingAdmissionPolicy that adds it at create in -policies, and are MutatingAdmissionPolicies served?",
				timeout, paymentsv1alpha1.Finalizer, job.Finalizers)
		}
		if err := sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
	}
}
