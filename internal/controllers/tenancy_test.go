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

package controllers_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/egress"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
)

// The tests of a cluster shared by tenants who may edit PaymentProviders
// and PaymentJobs but not read Secrets: the operator reads only Secrets
// labelled for it, calls only the endpoints its egress policy allows, and
// never sends a packet anywhere but loopback while proving it.

// apiRequests records the manager's requests to the API server.
type apiRequests struct {
	mu   sync.Mutex
	seen []*http.Request
}

func (a *apiRequests) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		a.mu.Lock()
		a.seen = append(a.seen, req.Clone(req.Context()))
		a.mu.Unlock()
		return next.RoundTrip(req)
	})
}

// secrets returns the requests that touched Secrets.
func (a *apiRequests) secrets() []*http.Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []*http.Request
	for _, r := range a.seen {
		if strings.Contains(r.URL.Path, "/secrets") {
			out = append(out, r)
		}
	}
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestUnlabelledSecretIsNeverRead: a PaymentProvider that names a Secret
// without the credentials label is not Ready and says which label to add;
// the manager never fetches that Secret (every Secret request it makes is a
// list or watch selected by the label), and the same Secret works once it
// is labelled.
func TestUnlabelledSecretIsNeverRead(t *testing.T) {
	ctx := context.Background()
	s := newScenario(t, withoutSecret(), withoutLookups(), withoutManager())
	s.Expect(k8sClient.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "sandbox-credentials", Namespace: s.ns},
		Data:       map[string][]byte{"apiKey": []byte(testSecretValue)},
	})).To(Succeed())
	requests := &apiRequests{}
	s.start(managerConfig{transport: requests.wrap})

	s.Eventually(func(g Gomega) {
		ready := providerReady(g, s.ns)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(paymentsv1alpha1.ReasonSecretNotFound))
		g.Expect(ready.Message).To(ContainSubstring(`Secret "sandbox-credentials"`))
		g.Expect(ready.Message).To(ContainSubstring(`payments.idempotency.dev/credentials: "true"`))
	}, timeout, 50*time.Millisecond).Should(Succeed())
	s.create("waits")
	s.Eventually(func(g Gomega) {
		g.Expect(readyCondition(g, s.ns, "waits").Reason).To(Equal(paymentsv1alpha1.ReasonProviderNotReady))
	}, timeout, 50*time.Millisecond).Should(Succeed())
	expectOnlyLabelledSecretRequests(s, requests)

	// Labelled, the same Secret is used at once: the watch brings it.
	var secret corev1.Secret
	s.Expect(k8sClient.Get(ctx, types.NamespacedName{Namespace: s.ns, Name: "sandbox-credentials"}, &secret)).To(Succeed())
	secret.Labels = map[string]string{paymentsv1alpha1.LabelCredentials: "true"}
	s.Expect(k8sClient.Update(ctx, &secret)).To(Succeed())
	s.waitForPhase("waits", paymentsv1alpha1.PhaseCompleted)
	s.Expect(s.sandbox.Calls()).To(Equal(int64(1)))
	expectOnlyLabelledSecretRequests(s, requests)
}

// expectOnlyLabelledSecretRequests checks that every request the manager
// made for Secrets was a list or watch selected by the credentials label:
// no get of one Secret, and no unselected list.
func expectOnlyLabelledSecretRequests(g Gomega, requests *apiRequests) {
	seen := requests.secrets()
	g.Expect(seen).NotTo(BeEmpty(), "the manager watches the labelled Secrets")
	for _, r := range seen {
		g.Expect(r.Method).To(Equal(http.MethodGet))
		g.Expect(r.URL.Path).To(HaveSuffix("/secrets"), "a request for one Secret: %s", r.URL.Path)
		g.Expect(r.URL.Query().Get("labelSelector")).To(Equal(paymentsv1alpha1.LabelCredentials+"=true"),
			"a Secret request without the label selector: %s", r.URL)
	}
}

// TestPlainHTTPOnlyToListedHosts: a provider URL with plain http is refused
// with a condition naming the field and the flag, unless its host is in
// --insecure-provider-hosts.
func TestPlainHTTPOnlyToListedHosts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		insecure  []string
		wantReady metav1.ConditionStatus
		wantIn    []string
	}{
		{name: "not listed", wantReady: metav1.ConditionFalse,
			wantIn: []string{"spec.stripe.apiBase", "https", "--insecure-provider-hosts"}},
		{name: "another host listed", insecure: []string{"payments.internal"}, wantReady: metav1.ConditionFalse,
			wantIn: []string{"spec.stripe.apiBase", "127.0.0.1"}},
		{name: "listed", insecure: []string{"127.0.0.1"}, wantReady: metav1.ConditionTrue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			policy := &egress.Policy{InsecureHosts: tt.insecure}
			s := newScenario(t, withManager(managerConfig{egress: policy, build: providercache.NewAdapterFactory(policy)}))
			s.Eventually(func(g Gomega) {
				ready := providerReady(g, s.ns)
				g.Expect(ready.Status).To(Equal(tt.wantReady), "%s: %s", ready.Reason, ready.Message)
				if tt.wantReady == metav1.ConditionFalse {
					g.Expect(ready.Reason).To(Equal(paymentsv1alpha1.ReasonEndpointRefused))
					for _, s := range tt.wantIn {
						g.Expect(ready.Message).To(ContainSubstring(s))
					}
				}
			}, timeout, 50*time.Millisecond).Should(Succeed())
		})
	}
}

// stubResolver answers every name with one address, never asking DNS.
type stubResolver struct{ addr string }

func (r stubResolver) LookupIPAddr(context.Context, string) ([]net.IPAddr, error) {
	return []net.IPAddr{{IP: net.ParseIP(r.addr)}}, nil
}

// loopbackOnly is a dialer Control hook that runs after the egress policy
// allowed an address and before the connection is made: any address
// outside 127.0.0.0/8 fails the test and is never connected to.
func loopbackOnly(t *testing.T) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !netip.MustParsePrefix("127.0.0.0/8").Contains(ap.Addr().Unmap()) {
			t.Errorf("the egress policy let a connection to %s (%s) through", address, network)
			return errors.New("test: connections outside 127.0.0.0/8 are forbidden")
		}
		return nil
	}
}

// TestForbiddenAddressesRefusedAtDialTime: a provider host that resolves to
// link-local, private or loopback addresses is refused. The provider's
// condition says so when its name resolves there already; when the name
// resolved to a public address at that check and changes its answer before
// the call (DNS rebinding), the dialer refuses the address it would connect
// to, and the job waits with the refusal in its condition. No connection is
// ever attempted: the test's Control hook would fail the test.
func TestForbiddenAddressesRefusedAtDialTime(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"169.254.169.254", "10.0.0.1", "::1"} {
		t.Run(addr, func(t *testing.T) {
			s := newScenario(t, withoutManager(), withProvider(func(pp *paymentsv1alpha1.PaymentProvider) {
				pp.Spec.Stripe.APIBase = "https://payments.example.test"
			}))

			// The provider's check: the name resolves to the address.
			checked := &egress.Policy{Resolver: stubResolver{addr}, Control: loopbackOnly(t)}
			m := s.start(managerConfig{egress: checked, build: providercache.NewAdapterFactory(checked)})
			s.Eventually(func(g Gomega) {
				ready := providerReady(g, s.ns)
				g.Expect(ready.Reason).To(Equal(paymentsv1alpha1.ReasonEndpointRefused), ready.Message)
				g.Expect(ready.Message).To(ContainSubstring(addr))
			}, timeout, 50*time.Millisecond).Should(Succeed())
			m.stop()

			// Rebinding: public at the check, the address at the dial.
			public := &egress.Policy{Resolver: stubResolver{"203.0.113.10"}}
			dialed := &egress.Policy{Resolver: stubResolver{addr}, Control: loopbackOnly(t)}
			s.start(managerConfig{egress: public, build: providercache.NewAdapterFactory(dialed)})
			s.create("rebound")
			s.Eventually(func(g Gomega) {
				ready := readyCondition(g, s.ns, "rebound")
				g.Expect(ready.Reason).To(Equal(paymentsv1alpha1.ReasonProviderNotReady), ready.Message)
				g.Expect(ready.Message).To(ContainSubstring("refused"))
				g.Expect(ready.Message).To(ContainSubstring(addr))
			}, timeout, 50*time.Millisecond).Should(Succeed())
			job := s.job("rebound")
			s.Expect(job.Status.Phase).To(Equal(paymentsv1alpha1.PhasePending), "never claimed, never charged")
		})
	}
}
