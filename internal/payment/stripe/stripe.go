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

package stripe

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	stripego "github.com/stripe/stripe-go/v85"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// DefaultAPIBase is the Stripe API used when Config.APIBase is empty.
const DefaultAPIBase = "https://api.stripe.com"

// DefaultPollInterval is the first wait between two reads of an intent that
// is not final yet, when Config.PollInterval is zero.
const DefaultPollInterval = payment.DefaultPollInterval

// DefaultMaxPollInterval is the longest wait between two reads of an intent,
// when Config.MaxPollInterval is zero.
const DefaultMaxPollInterval = payment.DefaultMaxPollInterval

var (
	_ payment.Provider   = (*Provider)(nil)
	_ payment.Looker     = (*Provider)(nil)
	_ payment.Identifier = (*Provider)(nil)
	_ payment.Refunder   = (*Provider)(nil)
)

// Config configures a Provider.
type Config struct {
	// APIKey is the Stripe secret key. Surrounding whitespace, such as the
	// newline a Secret created from a file often ends with, is removed.
	// Required; it never appears in errors.
	APIKey string
	// APIBase is the Stripe API's base URL, an absolute http or https URL
	// without user information, such as the sandbox's or stripe-mock's.
	// Defaults to DefaultAPIBase.
	APIBase string
	// HTTPClient sends the requests. The default has dial and TLS handshake
	// timeouts and does not follow redirects; the deadline of a call comes
	// from its context.
	HTTPClient *http.Client
	// PollInterval is the first wait between two reads of an intent that is
	// still processing; it doubles after each read. Defaults to
	// DefaultPollInterval.
	PollInterval time.Duration
	// MaxPollInterval caps the wait between two reads. Defaults to
	// DefaultMaxPollInterval, or PollInterval when that is longer.
	MaxPollInterval time.Duration
}

// Provider is a payment.Provider, payment.Looker and payment.Identifier that
// charges through Stripe's PaymentIntents API, and a payment.Refunder that
// refunds them through the Refunds API. It is safe for concurrent use.
type Provider struct {
	client          *stripego.Client
	apiKey          string
	pollInterval    time.Duration
	maxPollInterval time.Duration
}

// New validates cfg and returns a Provider whose stripe-go client sends every
// request once: its network retries are turned off.
func New(cfg Config) (*Provider, error) {
	key := strings.TrimSpace(cfg.APIKey)
	switch {
	case key == "":
		return nil, errors.New("cannot use the Stripe API key: it is empty")
	case !payment.VisibleASCII(key):
		return nil, errors.New("cannot use the Stripe API key: it contains characters that are not allowed in an HTTP header")
	}
	base, err := apiBase(cfg.APIBase)
	if err != nil {
		return nil, err
	}
	poll, maxPoll, err := payment.PollIntervals(cfg.PollInterval, cfg.MaxPollInterval)
	if err != nil {
		return nil, err
	}
	httpClient := cfg.HTTPClient
	if httpClient == nil {
		httpClient = payment.NewHTTPClient()
	}

	backends := stripego.NewBackendsWithConfig(&stripego.BackendConfig{
		HTTPClient: httpClient,
		// The operator owns retries: each call is exactly one request,
		// and rate limits count requests.
		MaxNetworkRetries: stripego.Int64(0),
		URL:               stripego.String(base),
		// stripe-go logs whole responses at debug level and errors at
		// error level; this package logs nothing.
		LeveledLogger:   &stripego.LeveledLogger{Level: stripego.LevelNull},
		EnableTelemetry: stripego.Bool(false),
	})
	return &Provider{
		client:          stripego.NewClient(key, stripego.WithBackends(backends)),
		apiKey:          key,
		pollInterval:    poll,
		maxPollInterval: maxPoll,
	}, nil
}

// apiBase validates the configured base URL and returns it, or the default.
func apiBase(raw string) (string, error) {
	if raw == "" {
		return DefaultAPIBase, nil
	}
	u, err := payment.ParseEndpoint(raw, "the API key")
	if err != nil {
		return "", fmt.Errorf("cannot use the Stripe API base: %w", err)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", errors.New("cannot use the Stripe API base: it must not have a query or a fragment")
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

// Charge creates and confirms a PaymentIntent for req under key,
// off-session, polls it while it is processing, cancels it when it waits
// for a customer, and maps the answer to an outcome or to one of package
// payment's error classes, as the package documentation describes. It
// sends one create request, and a second one only when Stripe answers the
// first with an idempotency error (see legacyCreate); a context that is
// already done sends nothing.
func (p *Provider) Charge(ctx context.Context, key string, req payment.ChargeRequest) (payment.Outcome, error) {
	if !payment.ValidKey(key) {
		// Nothing is sent, so nothing can have been charged.
		return payment.Outcome{}, payment.Invalid("the idempotency key must be 1 to 255 visible ASCII characters")
	}
	if err := ctx.Err(); err != nil {
		return payment.Outcome{}, payment.Transient(fmt.Errorf("cannot create the payment intent: %w", err), 0)
	}
	intent, err := p.client.V1PaymentIntents.Create(ctx, createParams(key, req))
	if isIdempotencyError(err) {
		intent, err = p.legacyCreate(ctx, key, req)
	}
	if declined := authenticationDeclined(err); declined != nil {
		// Settle cancels the intent the decline left, so that nobody can
		// confirm it later: the job is Failed for good.
		return p.settle(ctx, declined, false)
	}
	if err != nil {
		return payment.Outcome{}, p.classify("cannot create the payment intent", err)
	}
	return p.settle(ctx, intent, replayedAnswer(intent.LastResponse))
}

// replayedAnswer reports whether Stripe answered a create with the saved
// answer of an earlier request under the same key: Idempotent-Replayed: true.
func replayedAnswer(resp *stripego.APIResponse) bool {
	return resp != nil && strings.EqualFold(resp.Header.Get("Idempotent-Replayed"), "true")
}

// createParams are the parameters of the create request for req under key.
// They depend on key and req only, and stripe-go encodes metadata with its
// keys sorted, so a retry sends the same bytes. off_session=true says that
// no customer is present: a payment that needs the customer's
// authentication (3-D Secure) is declined with authentication_required
// instead of waiting in requires_action for someone who never comes.
func createParams(key string, req payment.ChargeRequest) *stripego.PaymentIntentCreateParams {
	params := legacyCreateParams(key, req)
	params.OffSession = stripego.Bool(true)
	return params
}

// legacyCreateParams are createParams without off_session: what the
// operator sent before it sent off_session.
func legacyCreateParams(key string, req payment.ChargeRequest) *stripego.PaymentIntentCreateParams {
	metadata := payment.LookupMetadata(key, req)

	params := &stripego.PaymentIntentCreateParams{
		Amount:   stripego.Int64(req.Amount),
		Currency: stripego.String(req.Currency),
		Confirm:  stripego.Bool(true),
		AutomaticPaymentMethods: &stripego.PaymentIntentCreateAutomaticPaymentMethodsParams{
			Enabled:        stripego.Bool(true),
			AllowRedirects: stripego.String(stripego.PaymentIntentAutomaticPaymentMethodsAllowRedirectsNever),
		},
		Metadata: metadata,
	}
	if req.Customer != "" {
		params.Customer = stripego.String(req.Customer)
	}
	if req.PaymentMethod != "" {
		params.PaymentMethod = stripego.String(req.PaymentMethod)
	}
	if req.Description != "" {
		params.Description = stripego.String(req.Description)
	}
	params.SetIdempotencyKey(key)
	return params
}

// legacyCreate sends the create request as the operator sent it before it
// sent off_session, after Stripe answered createParams with an idempotency
// error: Stripe compares every parameter of a retry with the first request,
// so a job whose first attempt an older operator made would otherwise be
// refused as a key reused, and fail, although its first attempt may have
// charged. Stripe replays that first attempt's answer instead. A key
// genuinely used for another request is refused again, and the refusal
// stands.
func (p *Provider) legacyCreate(ctx context.Context, key string, req payment.ChargeRequest) (*stripego.PaymentIntent, error) {
	return p.client.V1PaymentIntents.Create(ctx, legacyCreateParams(key, req))
}

// authenticationDeclined returns the intent that a card error
// authentication_required left, with the error as its last payment error
// when Stripe's body left that out, and nil for any other error or one that
// carries no intent.
func authenticationDeclined(err error) *stripego.PaymentIntent {
	var se *stripego.Error
	if !errors.As(err, &se) || se.Type != stripego.ErrorTypeCard || cardReason(se) != ReasonAuthenticationRequired ||
		se.PaymentIntent == nil || se.PaymentIntent.ID == "" {
		return nil
	}
	in := *se.PaymentIntent
	if in.LastPaymentError == nil {
		last := *se
		last.PaymentIntent = nil
		in.LastPaymentError = &last
	}
	return &in
}

// needsAuthentication reports whether intent waits for a customer who is not
// there: requires_action, requires_confirmation, or requires_payment_method
// after its payment attempt was declined with authentication_required.
func needsAuthentication(intent *stripego.PaymentIntent) bool {
	switch intent.Status {
	case stripego.PaymentIntentStatusRequiresAction, stripego.PaymentIntentStatusRequiresConfirmation:
		return true
	case stripego.PaymentIntentStatusRequiresPaymentMethod:
		return intent.LastPaymentError != nil && cardReason(intent.LastPaymentError) == ReasonAuthenticationRequired
	}
	return false
}

// isIdempotencyError reports whether err is Stripe's idempotency_error: the
// key was first used with other parameters.
func isIdempotencyError(err error) bool {
	var se *stripego.Error
	return errors.As(err, &se) && se.Type == stripego.ErrorTypeIdempotency
}

// settle turns an intent into an outcome or an error, reading it again with
// GET while it is processing, with a wait that doubles from the poll
// interval to the maximum, until it is final or ctx is done. An intent that
// waits for a customer (needsAuthentication) is canceled once with abandon:
// a job has no customer present, an intent left in requires_action would
// keep the job uncertain forever, and one left requires_payment_method could
// still be confirmed on-session after the job failed. It never creates
// another intent.
func (p *Provider) settle(ctx context.Context, intent *stripego.PaymentIntent, replayed bool) (payment.Outcome, error) {
	wait := p.pollInterval
	// waited is the status the intent waited in when this call canceled
	// it; empty until then.
	var waited stripego.PaymentIntentStatus
	for {
		switch intent.Status {
		case stripego.PaymentIntentStatusSucceeded, stripego.PaymentIntentStatusRequiresCapture:
			if intent.ID == "" {
				return payment.Outcome{}, payment.Transient(errors.New("the successful payment intent from Stripe has no id"), 0)
			}
			return outcome(intent, replayed), nil
		case stripego.PaymentIntentStatusRequiresPaymentMethod:
			if waited == "" && intent.ID != "" && needsAuthentication(intent) {
				// Declined for want of authentication: Stripe keeps the
				// intent for the customer to confirm on-session, which
				// would charge a job already Failed. Cancel it; it moved
				// no money whatever the cancel answers, so a cancel that
				// fails leaves the refusal standing.
				waited = intent.Status
				if next, err := p.abandon(ctx, intent); err == nil {
					intent = next
					continue
				}
			}
			return payment.Outcome{}, p.declinedIntent(intent)
		case stripego.PaymentIntentStatusCanceled:
			return payment.Outcome{}, p.canceledIntent(intent, waited)
		case stripego.PaymentIntentStatusRequiresAction, stripego.PaymentIntentStatusRequiresConfirmation:
			if intent.ID == "" {
				return payment.Outcome{}, payment.Transient(fmt.Errorf("the payment intent from Stripe in status %s has no id", intent.Status), 0)
			}
			if waited != "" {
				return payment.Outcome{}, payment.Transient(fmt.Errorf("payment intent %s is still %s after it was canceled",
					p.clean(intent.ID), intent.Status), 0)
			}
			waited = intent.Status
			next, err := p.abandon(ctx, intent)
			if err != nil {
				return payment.Outcome{}, err
			}
			intent = next
			continue
		case stripego.PaymentIntentStatusProcessing:
			if err := processing(intent); err != nil {
				return payment.Outcome{}, err
			}
		default:
			return payment.Outcome{}, payment.Transient(fmt.Errorf("payment intent %s has the unexpected status %q",
				p.clean(intent.ID), p.clean(string(intent.Status))), 0)
		}

		if err := p.pause(ctx, &wait); err != nil {
			return payment.Outcome{}, p.stillWaiting(intent, err)
		}
		next, err := p.retrieve(ctx, intent.ID)
		if err != nil {
			if ctx.Err() != nil {
				// The call's time is up during the read.
				return payment.Outcome{}, p.stillWaiting(intent, err)
			}
			return payment.Outcome{}, p.readError("payment intent", intent.ID, string(intent.Status), err)
		}
		intent = next
	}
}

// pause waits *wait, or until ctx is done, and doubles *wait up to the
// maximum poll interval: the wait between two reads of an object that is
// not final yet. It returns ctx's error when ctx ended the wait.
func (p *Provider) pause(ctx context.Context, wait *time.Duration) error {
	timer := time.NewTimer(*wait)
	defer timer.Stop()
	*wait = min(2**wait, p.maxPollInterval)
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// abandon cancels intent, which waits for a customer, with POST
// /v1/payment_intents/{id}/cancel and cancellation_reason=abandoned, under
// the idempotency key "abandon_<id>" so that a retry replays the first
// answer. Stripe cancels only an intent that has not succeeded, so a cancel
// can never take back a payment; but the customer may authenticate just
// before it, and then Stripe refuses the cancel. So whenever the cancel
// does not answer a canceled intent, the intent is read again, and
// whatever it is then (succeeded, canceled, still waiting) is what settle
// decides on. Every error is uncertain.
func (p *Provider) abandon(ctx context.Context, intent *stripego.PaymentIntent) (*stripego.PaymentIntent, error) {
	params := &stripego.PaymentIntentCancelParams{
		CancellationReason: stripego.String(string(stripego.PaymentIntentCancellationReasonAbandoned)),
	}
	params.SetIdempotencyKey(abandonKey(intent.ID))
	canceled, err := p.client.V1PaymentIntents.Cancel(ctx, intent.ID, params)
	if err == nil && canceled.ID == intent.ID && canceled.Status == stripego.PaymentIntentStatusCanceled {
		return canceled, nil
	}
	next, rerr := p.retrieve(ctx, intent.ID)
	if rerr != nil {
		cause := rerr
		if err != nil {
			cause = fmt.Errorf("%w; canceling it: %w", rerr, p.classify("cannot cancel", err))
		}
		return nil, p.readError("payment intent", intent.ID, string(intent.Status), cause)
	}
	if next.ID != intent.ID {
		return nil, payment.Transient(fmt.Errorf("reading payment intent %s answered another intent, %q",
			p.clean(intent.ID), p.clean(next.ID)), 0)
	}
	return next, nil
}

// abandonKey is the idempotency key of the cancel of the intent with id.
func abandonKey(id string) string {
	return "abandon_" + id
}

// readError is the uncertain error of a failed read (or cancel) of the
// object (a payment intent, a refund) with id, last seen in status, which
// Stripe accepted and which may still succeed: no error while reading it is
// a refusal.
func (p *Provider) readError(object, id, status string, err error) error {
	mapped := p.classify("cannot read the "+object, err)
	hint := payment.RetryAfter(mapped)
	var t *payment.TransientError
	if errors.As(mapped, &t) && t.Err != nil {
		mapped = t.Err
	}
	return payment.Transient(fmt.Errorf("%s %s, last seen %s: %w",
		object, p.clean(id), status, mapped), hint)
}

// retrieve reads the intent with id: GET /v1/payment_intents/{id}.
func (p *Provider) retrieve(ctx context.Context, id string) (*stripego.PaymentIntent, error) {
	return p.client.V1PaymentIntents.Retrieve(ctx, id, nil)
}

// outcome is the payment outcome of a successful intent.
func outcome(intent *stripego.PaymentIntent, replayed bool) payment.Outcome {
	amount := intent.Amount
	if intent.AmountReceived > 0 {
		amount = intent.AmountReceived
	}
	return payment.Outcome{
		ID:       intent.ID,
		Status:   string(intent.Status),
		Amount:   amount,
		Currency: string(intent.Currency),
		Created:  unixTime(intent.Created),
		Replayed: replayed,
	}
}

// unixTime is the time of Stripe's created, Unix seconds; zero for none.
func unixTime(secs int64) time.Time {
	if secs <= 0 {
		return time.Time{}
	}
	return time.Unix(secs, 0).UTC()
}
