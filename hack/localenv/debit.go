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
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// The bank debit of the demo: a SEPA debit that waits AwaitingSettlement
// until the sandbox settles it and signs an event to the manager's events
// endpoint, which wakes it.

const (
	// debitNamespace and debitJob are the sample paid by SEPA debit.
	debitNamespace, debitJob = "payments-demo", "invoice-2026-0043-sepa"
	// debitSettleAfter is how long the sandbox keeps a bank debit
	// processing before it settles it.
	debitSettleAfter = 5 * time.Second
	// eventsProvider is the PaymentProvider the sandbox sends its events
	// to: the one of payments-demo, whose spec.events names the Secret of
	// the signing secret.
	eventsProvider = "sandbox"
	// sandboxSecretEnv is where the sandbox reads its webhook secret
	// (never its command line).
	sandboxSecretEnv = "SANDBOX_WEBHOOK_SECRET"
	// providerSamples is the sample file of the providers and Secrets.
	providerSamples = "config/samples/sandbox_provider.yaml"
)

// freeLoopbackAddr returns an address on 127.0.0.1 that nothing listens on
// now, for a server the manager starts a moment later.
func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("cannot find a free loopback port: %w", err)
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

// sampleObject is what webhookSecret reads of a sample.
type sampleObject struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	StringData map[string]string `json:"stringData"`
	Spec       struct {
		Events *paymentsv1alpha1.ProviderEvents `json:"events"`
	} `json:"spec"`
}

// webhookSecret reads, from the samples, the signing secret of the events
// of PaymentProvider payments-demo/sandbox: the name of the Secret its
// spec.events.secretRef names, and the value there. The sandbox signs with
// it, so that the samples stay the one place it is written.
func webhookSecret(root string) (name, secret string, err error) {
	f, err := os.Open(filepath.Join(root, providerSamples))
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	var objects []sampleObject
	dec := yaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var o sampleObject
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return "", "", fmt.Errorf("cannot read %s: %w", providerSamples, err)
		}
		objects = append(objects, o)
	}
	var ref *paymentsv1alpha1.SecretKeyReference
	for _, o := range objects {
		if o.Kind == "PaymentProvider" && o.Metadata.Namespace == debitNamespace && o.Metadata.Name == eventsProvider && o.Spec.Events != nil {
			ref = &o.Spec.Events.SecretRef
		}
	}
	if ref == nil {
		return "", "", fmt.Errorf("%s: PaymentProvider %s/%s has no spec.events.secretRef", providerSamples, debitNamespace, eventsProvider)
	}
	for _, o := range objects {
		if o.Kind == "Secret" && o.Metadata.Namespace == debitNamespace && o.Metadata.Name == ref.Name && o.StringData[ref.Key] != "" {
			return ref.Name, o.StringData[ref.Key], nil
		}
	}
	return "", "", fmt.Errorf("%s: no Secret %s/%s with stringData.%s, which PaymentProvider %s's spec.events names",
		providerSamples, debitNamespace, ref.Name, ref.Key, eventsProvider)
}

// debitWatch shows the debit sample while it settles: the first time the
// demo sees it Processing with Ready=False AwaitingSettlement, it prints
// `kubectl payments status` of it, which must show its Settling line.
type debitWatch struct {
	kubectl kubectlFunc
	shown   bool
}

// observe looks at the debit sample as waitForSamples read it.
func (w *debitWatch) observe(job paymentsv1alpha1.PaymentJob) error {
	if w.shown || job.Status.Phase != paymentsv1alpha1.PhaseProcessing ||
		readyReason(job.Status.Conditions) != paymentsv1alpha1.ReasonAwaitingSettlement {
		return nil
	}
	w.shown = true
	step("%s waits in Processing (AwaitingSettlement): the bank has not settled the SEPA debit (the sandbox settles it after %s):",
		debitJob, debitSettleAfter)
	args := []string{"payments", "status", "pj/" + debitJob, "-n", debitNamespace}
	fmt.Printf("    kubectl %s\n", strings.Join(args, " "))
	out, err := w.kubectl(args...)
	if err != nil {
		return err
	}
	fmt.Print(indent(out))
	if !strings.Contains(out, "Settling:") {
		return fmt.Errorf("kubectl payments status pj/%s showed no Settling line while it settled", debitJob)
	}
	return nil
}

// done fails when the demo never saw the debit waiting.
func (w *debitWatch) done() error {
	if !w.shown {
		return fmt.Errorf("PaymentJob %s/%s reached its phase without the demo seeing it wait in Processing (AwaitingSettlement)",
			debitNamespace, debitJob)
	}
	return nil
}

// showDebit tells how the debit ended: when it settled, the job's events
// (AwaitingSettlement, then Succeeded), and that a verified provider event
// woke it: the manager's metrics count the wake, and it settled sooner
// than the first read the operator would have made without the event.
func (e *localEnv) showDebit(ctx context.Context, c client.Client) error {
	var job paymentsv1alpha1.PaymentJob
	if err := c.Get(ctx, client.ObjectKey{Namespace: debitNamespace, Name: debitJob}, &job); err != nil {
		return fmt.Errorf("cannot get PaymentJob %s/%s: %w", debitNamespace, debitJob, err)
	}
	s := job.Status.Settlement
	if s == nil || s.SettledAt == nil {
		return fmt.Errorf("PaymentJob %s/%s is %s with no status.settlement.settledAt", debitNamespace, debitJob, job.Status.Phase)
	}
	fmt.Println()
	step("The bank debit %s: %s (%s); the %s settled %s after the provider accepted it",
		debitJob, job.Status.Phase, jobMessage(job), s.Method, s.SettledAt.Sub(s.Since.Time).Round(100*time.Millisecond))

	out, err := e.kubectl("get", "events", "-n", debitNamespace, "--sort-by=.metadata.creationTimestamp",
		"--field-selector", "involvedObject.kind=PaymentJob,involvedObject.name="+debitJob,
		"-o", "custom-columns=TYPE:.type,REASON:.reason,MESSAGE:.message")
	if err != nil {
		return err
	}
	step("Its events (kubectl get events -n %s --field-selector involvedObject.name=%s):", debitNamespace, debitJob)
	fmt.Print(indent(out))
	if !inOrder(out, paymentsv1alpha1.ReasonAwaitingSettlement, "Succeeded") {
		return fmt.Errorf("the events of %s are not AwaitingSettlement, then Succeeded", debitJob)
	}

	hooks, err := sandboxWebhooks(ctx)
	if err != nil {
		return err
	}
	step("The sandbox signed %d events (Stripe-Signature) and POSTed them to http://%s/events/%s/%s: %d delivered, %d failed",
		hooks.Events, e.eventsAddr, debitNamespace, eventsProvider, hooks.Delivered, hooks.Failed)

	metrics, err := e.managerMetrics(ctx, "paymentjob_events_received_total", "paymentjob_event_wakes_total")
	if err != nil {
		return err
	}
	step("The manager's metrics (GET http://%s/metrics):", e.metricsAddr)
	fmt.Print(indent(strings.Join(metrics.lines, "\n")))
	wakes := metrics.sum["paymentjob_event_wakes_total"]
	if wakes < 1 {
		return fmt.Errorf("no provider event woke %s: paymentjob_event_wakes_total is 0", debitJob)
	}
	step("A verified event woke %s (paymentjob_event_wakes_total %g): with events on, the operator reads a settling payment "+
		"first %s after the provider accepted it, and read this one when the event said it settled.",
		debitJob, wakes, payment.SettleReadInterval(0, true))
	return nil
}

// jobMessage is the message of the job's Ready condition, if any.
func jobMessage(job paymentsv1alpha1.PaymentJob) string {
	if ready := meta.FindStatusCondition(job.Status.Conditions, paymentsv1alpha1.ConditionReady); ready != nil {
		return ready.Message
	}
	return ""
}

// inOrder reports whether the words appear in s in this order.
func inOrder(s string, words ...string) bool {
	for _, w := range words {
		i := strings.Index(s, w)
		if i < 0 {
			return false
		}
		s = s[i+len(w):]
	}
	return true
}

// webhookCounters are the sandbox's counters of the webhooks it sent.
type webhookCounters struct {
	Events    int64 `json:"events"`
	Delivered int64 `json:"delivered"`
	Failed    int64 `json:"failed"`
}

// sandboxWebhooks reads GET /_sandbox/webhooks.
func sandboxWebhooks(ctx context.Context) (webhookCounters, error) {
	var body struct {
		Stats webhookCounters `json:"stats"`
	}
	resp, err := get(ctx, "http://"+sandboxAddr+"/_sandbox/webhooks")
	if err != nil {
		return body.Stats, fmt.Errorf("cannot read the sandbox's webhook counters: %w", err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return body.Stats, fmt.Errorf("cannot decode the sandbox's webhook counters: %w", err)
	}
	return body.Stats, nil
}

// scraped are the lines of some metrics and each metric's sum.
type scraped struct {
	lines []string
	sum   map[string]float64
}

// managerMetrics scrapes the manager's metrics (plain http on loopback)
// and keeps the samples of the metrics named.
func (e *localEnv) managerMetrics(ctx context.Context, names ...string) (scraped, error) {
	m := scraped{sum: map[string]float64{}}
	resp, err := get(ctx, "http://"+e.metricsAddr+"/metrics")
	if err != nil {
		return m, fmt.Errorf("cannot read the manager's metrics: %w", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		for _, name := range names {
			rest, ok := strings.CutPrefix(line, name)
			if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
				continue
			}
			m.lines = append(m.lines, line)
			if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
				m.sum[name] += v
			}
		}
	}
	return m, sc.Err()
}

// get sends GET url and returns a 200 answer.
func get(ctx context.Context, url string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return resp, nil
}
