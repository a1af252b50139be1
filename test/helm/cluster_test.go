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

package helm

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/kube"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// The control plane (KUBEBUILDER_ASSETS: the self-built kube-apiserver and
// etcd), started by the first test that needs it and stopped by TestMain.
var (
	envOnce sync.Once
	env     *envtest.Environment
	k8s     client.Client
	envErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if env != nil {
		if err := env.Stop(); err != nil && code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// cluster starts the control plane once and returns a client of it.
func cluster(t *testing.T) client.Client {
	t.Helper()
	mustEnv(t, "KUBEBUILDER_ASSETS")
	envOnce.Do(func() {
		scheme := runtime.NewScheme()
		if envErr = clientgoscheme.AddToScheme(scheme); envErr != nil {
			return
		}
		if envErr = apiextensionsv1.AddToScheme(scheme); envErr != nil {
			return
		}
		e := &envtest.Environment{Scheme: scheme}
		cfg, err := e.Start()
		if err != nil {
			envErr = err
			return
		}
		env = e
		k8s, envErr = client.New(cfg, client.Options{Scheme: scheme})
	})
	if envErr != nil {
		t.Fatalf("control plane: %v", envErr)
	}
	return k8s
}

// createNamespace creates a namespace with labels, once.
func createNamespace(t *testing.T, c client.Client, name string, labels map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	if err := c.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// standInCRD installs a CRD that accepts any spec, in place of one of the
// Prometheus Operator's, whose CRDs are not available offline: the API
// server then checks the object's kind, metadata and that it is namespaced,
// not its spec.
func standInCRD(t *testing.T, c client.Client, group, kind, plural string) {
	t.Helper()
	preserve := true
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, Plural: plural, ListKind: kind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: &preserve,
				}},
			}},
		},
	}
	if err := c.Create(context.Background(), crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	NewWithT(t).Eventually(func(g Gomega) {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(group + "/v1")
		u.SetKind(kind)
		u.SetName("probe")
		u.SetNamespace("default")
		g.Expect(c.Create(context.Background(), u, client.DryRunAll)).To(Succeed())
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
}

// Every object the chart renders, with the defaults and with every value set,
// is accepted by the API server: a server-side dry run of each against the
// self-built control plane, which validates the CRDs, the admission
// policies' CEL, the RBAC, the Deployment and the network policies.
func TestChartObjectsAcceptedByTheAPIServer(t *testing.T) {
	c := cluster(t)
	createNamespace(t, c, releaseNamespace, nil)
	standInCRD(t, c, "monitoring.coreos.com", "ServiceMonitor", "servicemonitors")
	standInCRD(t, c, "monitoring.coreos.com", "PrometheusRule", "prometheusrules")

	for _, tc := range valueSets(t) {
		t.Run(tc.name, func(t *testing.T) {
			objs := mustRender(t, tc.vals)
			NewWithT(t).Expect(len(objs)).To(BeNumerically(">=", 20))
			for _, o := range objs {
				t.Run(o.GetKind()+"/"+o.GetName(), func(t *testing.T) {
					g := NewWithT(t)
					g.Expect(c.Create(context.Background(), o.DeepCopy(), client.DryRunAll)).To(Succeed())
				})
			}
		})
	}
}

// The manager's pod, as the chart's Deployment makes it, is admitted in a
// namespace that enforces the restricted Pod Security Standard; the same
// pod with privilege escalation allowed is refused there (the check bites).
func TestManagerPodAdmittedUnderRestrictedPodSecurity(t *testing.T) {
	g := NewWithT(t)
	c := cluster(t)
	const ns = "restricted"
	createNamespace(t, c, ns, map[string]string{
		"pod-security.kubernetes.io/enforce":         "restricted",
		"pod-security.kubernetes.io/enforce-version": "latest",
	})

	for _, tc := range valueSets(t) {
		deploy := only(t, mustRender(t, tc.vals), "Deployment")
		pod := podOf(t, deploy, ns)
		g.Expect(c.Create(context.Background(), pod, client.DryRunAll)).To(Succeed(), tc.name)
	}

	pod := podOf(t, only(t, mustRender(t, map[string]any{}), "Deployment"), ns)
	escalation := true
	pod.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = &escalation
	err := c.Create(context.Background(), pod, client.DryRunAll)
	g.Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want the restricted profile to refuse it, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("allowPrivilegeEscalation"))
}

// podOf is the pod a Deployment's template makes, in namespace ns.
func podOf(t *testing.T, deploy *unstructured.Unstructured, ns string) *corev1.Pod {
	t.Helper()
	tmpl, _, _ := unstructured.NestedMap(deploy.Object, "spec", "template")
	var spec corev1.PodTemplateSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, &spec); err != nil {
		t.Fatal(err)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "manager", Namespace: ns, Labels: spec.Labels},
		Spec:       spec.Spec,
	}
}

// helmConfig is a Helm action configuration for the control plane, as the
// CLI makes one from a kubeconfig.
func helmConfig(t *testing.T, namespace string) *action.Configuration {
	t.Helper()
	path := writeKubeconfig(t)
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &path
	flags.Namespace = &namespace
	cfg := action.NewConfiguration()
	if err := cfg.Init(flags, namespace, "secret"); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// helm install, helm upgrade with a changed value, helm rollback and helm
// uninstall, on the control plane: the upgrade and the rollback reach the
// manager's arguments, and the uninstall removes the manager but keeps the
// CRDs and with them every PaymentJob. Installing again adopts the kept CRDs.
func TestInstallUpgradeUninstallKeepsCRDsAndJobs(t *testing.T) {
	g := NewWithT(t)
	c := cluster(t)
	const ns, release = "operators", "payments"
	ctx := context.Background()
	cfg := helmConfig(t, ns)
	ch := loadChart(t)

	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace, install.CreateNamespace = release, ns, true
	install.WaitStrategy, install.Timeout = kube.HookOnlyStrategy, 2*time.Minute
	_, err := install.Run(ch, map[string]any{})
	g.Expect(err).NotTo(HaveOccurred())

	deployKey := client.ObjectKey{Namespace: ns, Name: "payments-paymentjob-operator-controller-manager"}
	deploy := &unstructured.Unstructured{}
	deploy.SetAPIVersion("apps/v1")
	deploy.SetKind("Deployment")
	g.Expect(c.Get(ctx, deployKey, deploy)).To(Succeed())
	g.Expect(containerArgs(t, deploy)).To(ContainElement("--max-concurrent-reconciles=10"))

	// A payment, created once the CRDs are established.
	createNamespace(t, c, "payments", nil)
	job := samplePaymentJob("payments")
	g.Eventually(func() error { return c.Create(ctx, job.DeepCopy()) }).
		WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	upgrade := action.NewUpgrade(cfg)
	upgrade.Namespace = ns
	upgrade.WaitStrategy, upgrade.Timeout = kube.HookOnlyStrategy, 2*time.Minute
	_, err = upgrade.Run(release, ch, map[string]any{"operator": map[string]any{"maxConcurrentReconciles": 20}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Get(ctx, deployKey, deploy)).To(Succeed())
	g.Expect(containerArgs(t, deploy)).To(ContainElement("--max-concurrent-reconciles=20"))

	// helm rollback to the first revision puts the first values back.
	rollback := action.NewRollback(cfg)
	rollback.Version = 1
	rollback.WaitStrategy, rollback.Timeout = kube.HookOnlyStrategy, 2*time.Minute
	g.Expect(rollback.Run(release)).To(Succeed())
	g.Expect(c.Get(ctx, deployKey, deploy)).To(Succeed())
	g.Expect(containerArgs(t, deploy)).To(ContainElement("--max-concurrent-reconciles=10"))

	uninstall := action.NewUninstall(cfg)
	uninstall.WaitStrategy, uninstall.Timeout = kube.HookOnlyStrategy, 2*time.Minute
	_, err = uninstall.Run(release)
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(func() bool { return apierrors.IsNotFound(c.Get(ctx, deployKey, deploy.DeepCopy())) }).
		WithTimeout(30*time.Second).WithPolling(200*time.Millisecond).Should(BeTrue(), "the manager is uninstalled")
	for _, name := range []string{"paymentjobs", "paymentproviders", "paymentledgers", "paymentrefunds"} {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: name + ".payments.idempotency.dev"}, crd)).To(Succeed(), "CRD %s kept", name)
		g.Expect(crd.DeletionTimestamp).To(BeNil())
	}
	kept := samplePaymentJob("payments")
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(kept), kept)).To(Succeed(), "the PaymentJob survives the uninstall")

	again := action.NewInstall(cfg)
	again.ReleaseName, again.Namespace = release, ns
	again.WaitStrategy, again.Timeout = kube.HookOnlyStrategy, 2*time.Minute
	_, err = again.Run(ch, map[string]any{})
	g.Expect(err).NotTo(HaveOccurred(), "installing again adopts the kept CRDs")
}

// samplePaymentJob is a PaymentJob in namespace ns.
func samplePaymentJob(ns string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "payments.idempotency.dev/v1alpha1",
		"kind":       "PaymentJob",
		"metadata":   map[string]any{"name": "invoice-42", "namespace": ns},
		"spec": map[string]any{
			"providerRef": map[string]any{"name": "stripe"},
			"amount":      int64(1999),
			"currency":    "eur",
		},
	}}
	return u
}

// A cluster installed from dist/install.yaml (kubectl apply, kustomize)
// moves to the chart with `helm install --take-ownership`: Helm refuses the
// objects it did not create until told to take them over, and then adopts
// them in place, CRDs and jobs included. The chart's release must be named
// paymentjob-operator, in the installer's namespace, for the names to match.
func TestMigrateFromInstallerToChart(t *testing.T) {
	g := NewWithT(t)
	c := cluster(t)
	ctx := context.Background()
	// `kubectl apply -f dist/install.yaml` on a fresh cluster: creates. The
	// CRDs may exist already (an earlier test installed the chart).
	for _, o := range installer(t) {
		err := c.Create(ctx, o, client.FieldOwner("kubectl-client-side-apply"))
		g.Expect(err == nil || apierrors.IsAlreadyExists(err)).To(BeTrue(), "%s %s: %v", o.GetKind(), o.GetName(), err)
	}
	cfg := helmConfig(t, releaseNamespace)
	ch := loadChart(t)

	install := action.NewInstall(cfg)
	install.ReleaseName, install.Namespace = releaseName, releaseNamespace
	install.WaitStrategy, install.Timeout = kube.HookOnlyStrategy, 2*time.Minute
	_, err := install.Run(ch, map[string]any{})
	g.Expect(err).To(MatchError(ContainSubstring("cannot be imported")), "Helm never silently adopts what it did not create")

	install = action.NewInstall(cfg)
	install.ReleaseName, install.Namespace = releaseName, releaseNamespace
	install.WaitStrategy, install.Timeout = kube.HookOnlyStrategy, 2*time.Minute
	install.TakeOwnership, install.ForceConflicts = true, true
	_, err = install.Run(ch, map[string]any{})
	g.Expect(err).NotTo(HaveOccurred())

	deploy := &unstructured.Unstructured{}
	deploy.SetAPIVersion("apps/v1")
	deploy.SetKind("Deployment")
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: "paymentjob-operator-controller-manager"}, deploy)).To(Succeed())
	g.Expect(deploy.GetAnnotations()).To(HaveKeyWithValue("meta.helm.sh/release-name", releaseName))
	g.Expect(containerArgs(t, deploy)).To(ContainElement("--claim-lease-duration=60s"), "the chart's arguments")

	// The chart names its admission policy bindings "<policy>-binding"
	// (config/helm): the installer's bindings stay behind, binding the same
	// policies twice, until deleted by hand (README).
	for _, kind := range []string{"ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicyBinding"} {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion("admissionregistration.k8s.io/v1")
		list.SetKind(kind + "List")
		g.Expect(c.List(ctx, list)).To(Succeed())
		names := make([]string, 0, len(list.Items))
		for _, b := range list.Items {
			names = append(names, b.GetName())
		}
		g.Expect(names).To(ContainElement(HavePrefix("paymentjob-operator-")))
		g.Expect(names).To(ContainElement(HaveSuffix("-binding")))
	}
}
