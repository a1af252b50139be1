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

package paymentjobtest

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// Signed provider events: the operator in the Env serves its events
// endpoint (POST /events/<namespace>/<provider>) on 127.0.0.1, and an
// event wakes the jobs it names, which read their provider before they
// write anything. EnableEvents gives a provider its endpoint secret,
// EventsURL says where to send, and SendEvent sends a Stripe event signed
// as Stripe signs it.

// eventsReadyTimeout bounds the wait for the events endpoint to listen.
const eventsReadyTimeout = 10 * time.Second

// freeLoopbackAddress returns a loopback address with a port free now, for
// the events endpoint, which listens on an address given in advance.
func freeLoopbackAddress() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("paymentjobtest: cannot find a free loopback port for the events endpoint: %w", err)
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

// waitForEventsEndpoint waits until the events endpoint accepts
// connections.
func (e *Env) waitForEventsEndpoint(ctx context.Context) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, pollInterval, eventsReadyTimeout, true, func(ctx context.Context) (bool, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", e.eventsAddr)
		if err != nil {
			last = err
			return e.stopped(), nil
		}
		return true, conn.Close()
	})
	if err == nil && e.stopped() {
		err = errors.New("the operator is not running")
	}
	if err != nil {
		return fmt.Errorf("paymentjobtest: the events endpoint does not listen on %s (%w; last: %w)", e.eventsAddr, err, last)
	}
	return nil
}

// EventsURL is the URL of the operator's events endpoint for the
// PaymentProvider namespace/provider, on 127.0.0.1: where the provider
// sends its signed events. It is "" when Options.Operator.EventsBindAddress
// is "0", which turns the endpoint off.
func (e *Env) EventsURL(namespace, provider string) string {
	if e.eventsAddr == "" {
		return ""
	}
	host, port, err := net.SplitHostPort(e.eventsAddr)
	if err != nil {
		return ""
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/events/" + namespace + "/" + provider
}

// EnableEvents gives the PaymentProvider namespace/provider the endpoint
// secret of its events, in a labelled Secret (provider-events), and waits
// until the provider is Ready again. The operator then accepts the events
// signed with secret at EventsURL, and reads the provider's settling
// payments less often, counting on the events to wake them.
func (e *Env) EnableEvents(ctx context.Context, namespace, provider, secret string) error {
	if strings.TrimSpace(secret) == "" {
		return errors.New("paymentjobtest: cannot enable events without a secret")
	}
	ref, err := e.createCredentials(ctx, namespace, provider+"-events", "secret", secret)
	if err != nil {
		return err
	}
	pp := &paymentsv1alpha1.PaymentProvider{}
	if err := e.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: provider}, pp); err != nil {
		return fmt.Errorf("paymentjobtest: cannot read the PaymentProvider: %w", err)
	}
	patch := client.MergeFrom(pp.DeepCopy())
	pp.Spec.Events = &paymentsv1alpha1.ProviderEvents{SecretRef: *ref}
	if err := e.client.Patch(ctx, pp, patch); err != nil {
		return fmt.Errorf("paymentjobtest: cannot enable the PaymentProvider's events: %w", err)
	}
	_, err = e.WaitForProviderReady(ctx, namespace, provider, providerReadyTimeout)
	return err
}

// SendEvent sends to url (EventsURL) a Stripe event of eventType about the
// job's payment, signed with secret in a Stripe-Signature header as Stripe
// signs its webhooks (sandbox.Sign), and returns an error unless the
// endpoint answers 2xx; the error has the status and what the endpoint
// said. eventType is one of Stripe's payment_intent.* types, such as
// payment_intent.succeeded or payment_intent.payment_failed. The job must
// have been read back once the provider answered (status.providerResponse.id,
// set while it is AwaitingSettlement). An event only wakes the job: it
// reads the provider before it writes anything, so an event that says more
// than the provider changes nothing.
func SendEvent(ctx context.Context, url, secret, eventType string, job *paymentsv1alpha1.PaymentJob) error {
	if job.Status.ProviderResponse == nil || job.Status.ProviderResponse.ID == "" {
		return fmt.Errorf("paymentjobtest: cannot send an event about job %s: it names no payment yet "+
			"(read it back once it is AwaitingSettlement or Completed)", types.NamespacedName{Namespace: job.Namespace, Name: job.Name})
	}
	ev := stripeEvent{ID: "evt_" + rand.Text(), Object: "event", Type: eventType, Created: time.Now().Unix(),
		APIVersion: sandbox.StripeAPIVersion, PendingWebhooks: 1}
	ev.Data.Object = stripeIntent{ID: job.Status.ProviderResponse.ID, Object: "payment_intent",
		Amount: job.Spec.Amount, Currency: job.Spec.Currency,
		Metadata: map[string]string{payment.MetadataKeyIdempotencyKey: job.Namespace + "/" + cmp.Or(job.Spec.IdempotencyKey, job.Name)}}
	body, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("paymentjobtest: cannot write the event: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("paymentjobtest: cannot send an event to %s: %w", url, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Stripe-Signature", sandbox.Sign(secret, time.Now(), body))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("paymentjobtest: cannot send an event to %s: %w", url, err)
	}
	defer func() { _ = res.Body.Close() }()
	said, _ := io.ReadAll(io.LimitReader(res.Body, 512))
	if res.StatusCode < 200 || res.StatusCode > 299 {
		return fmt.Errorf("paymentjobtest: the events endpoint answered %s: %s", res.Status, strings.TrimSpace(string(said)))
	}
	return nil
}

// stripeEvent is an Event as Stripe sends it to a webhook endpoint.
type stripeEvent struct {
	ID              string `json:"id"`
	Object          string `json:"object"`
	Type            string `json:"type"`
	Created         int64  `json:"created"`
	Livemode        bool   `json:"livemode"`
	APIVersion      string `json:"api_version"`
	PendingWebhooks int    `json:"pending_webhooks"`
	Data            struct {
		Object stripeIntent `json:"object"`
	} `json:"data"`
}

// stripeIntent is the PaymentIntent of an event, with the fields the
// operator reads from it.
type stripeIntent struct {
	ID       string            `json:"id"`
	Object   string            `json:"object"`
	Amount   int64             `json:"amount"`
	Currency string            `json:"currency"`
	Metadata map[string]string `json:"metadata"`
}
