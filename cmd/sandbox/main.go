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

// Command sandbox serves the payment sandbox over HTTP as a subset of
// Stripe's PaymentIntents API, so that stripe-go (and the operator's Stripe
// adapter) can be run against it with injected faults. It accepts any
// sk_test_ key and therefore listens on a loopback address only, unless told
// otherwise.
//
// It also serves the operator's generic HTTP contract under /http/charges.
// Flags shape it like a real provider: --account-id names the account,
// --search-lag delays search like Stripe's index, --write-rate,
// --search-rate and --read-rate (or --live-rate-limits, Stripe's live-mode
// limits, where an explicit rate wins over the preset) answer 429 beyond a
// rate, and
// --idempotency=false charges every request, to prove that a client never
// sends the same payment twice.
//
// Stripe's 3-D Secure test cards are known: pm_card_authenticationRequired
// and pm_card_threeDSecureRequired are declined with authentication_required
// when confirmed with off_session=true (the intent is left
// requires_payment_method) and leave the intent in requires_action
// otherwise. --require-action=PM[,PM...] makes the sandbox leave every
// intent paid with one of those payment methods in requires_action, off
// session or not, as an intent made without off_session is left; a client
// ends it with POST /v1/payment_intents/{id}/cancel. Such intents and
// canceled ones are never counted as charges.
//
// Succeeded PaymentIntents can be refunded (POST /v1/refunds, or POST
// /http/refunds in the HTTP contract), never beyond their amount.
// --refund-settle-delay=D answers new refunds pending and lets them succeed
// D later, and POST /_sandbox/refunds/{id}/fail fails a refund after it
// succeeded, as a card refund can fail days later.
// --refund-amount-too-large-code=false refuses a refund beyond what is left
// as Stripe answers it, on param amount without a code (PUT
// /_sandbox/refunds {"amountTooLargeCode": false} on a running sandbox).
//
// For reconciliation it lists what it holds, newest first, a page at a
// time: GET /v1/payment_intents, /v1/refunds and /v1/disputes with
// created[gte] and created[lt], and GET /http/list in the HTTP contract.
// PUT and DELETE /_sandbox/intents/{id}, POST /_sandbox/intents/{id}/status
// and /dispute, and POST /_sandbox/disputes/{id}/status change its books
// behind a client's back (see sandbox.NewServer); --read-rate limits the
// reads.
//
// Bank debits (pm_success_de, pm_insufficientFunds_de, pm_usBankAccount_success,
// pm_usBankAccount_accountClosed, ...) are accepted processing and decided
// --debit-settle-after later (PUT /_sandbox/debits on a running sandbox).
// --webhook-url sends a signed event for every change, in Stripe's format or
// the HTTP contract's (--webhook-format), with the secret of
// --webhook-secret-file or $SANDBOX_WEBHOOK_SECRET (never a flag's value,
// never logged) and faults: --webhook-duplicate, --webhook-reorder,
// --webhook-drop and --webhook-bad-signature (probabilities, 0.2 or 20%),
// --webhook-delay, all drawn from --webhook-seed. GET /_sandbox/webhooks
// answers the counters; PUT changes the config.
//
// It prints "sandbox listening on http://ADDR" on stdout once it listens,
// logs one line per request on stderr, and stops gracefully on SIGINT or
// SIGTERM. Invalid flags exit with status 2.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

const (
	// defaultAddr is the address of stripe-mock, so that tools made for it
	// find the sandbox.
	defaultAddr = "127.0.0.1:12111"
	// readHeaderTimeout bounds how long a client may take to send headers.
	readHeaderTimeout = 10 * time.Second
	// idleTimeout closes keep-alive connections left idle.
	idleTimeout = 2 * time.Minute
	// shutdownTimeout bounds how long requests in flight (held for the
	// injected latency) may take to finish after a signal.
	shutdownTimeout = 30 * time.Second
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "sandbox:", err)
		os.Exit(exitCode(err))
	}
}

// usageError is an invalid command line.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

// exitCode is 2 for an invalid command line and 1 for any other error.
func exitCode(err error) int {
	if _, ok := errors.AsType[usageError](err); ok {
		return 2
	}
	return 1
}

// config is the parsed command line.
type config struct {
	addr             string
	allowNonLoopback bool
	faults           sandbox.Faults
	account          string
	idempotency      bool
	searchLag        time.Duration
	refundDelay      time.Duration
	// amountTooLargeCode is whether a refund beyond what is left is
	// refused with the code amount_too_large.
	amountTooLargeCode bool
	limits             sandbox.RateLimits
	requireAction      []string
	// webhooks are the flags of bank debits and webhooks.
	webhooks webhookFlags
}

// parseFlags parses the command line; it returns a nil config, and prints
// the usage on stdout, when help is asked for.
func parseFlags(args []string, stdout io.Writer) (*config, error) {
	var c config
	fs := flag.NewFlagSet("sandbox", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&c.addr, "addr", defaultAddr, "The address to listen on; 127.0.0.1:0 picks a free port.")
	fs.BoolVar(&c.allowNonLoopback, "allow-non-loopback", false,
		"Allow a non-loopback --addr. The sandbox accepts any sk_test_ key, so anyone who reaches it can use it.")
	fs.DurationVar(&c.faults.LatencyMin, "latency-min", 0, "The least time a request with a new key is held in flight.")
	fs.DurationVar(&c.faults.LatencyMax, "latency-max", 0, "The most time a request with a new key is held in flight.")
	fs.Float64Var(&c.faults.ErrorBeforeCommit, "error-before-commit", 0,
		"The probability, 0 to 1, that a request with a new key fails with a 500 before charging.")
	fs.Float64Var(&c.faults.ErrorAfterCommit, "error-after-commit", 0,
		"The probability, 0 to 1, that a request with a new key charges and then fails with a 500.")
	fs.Float64Var(&c.faults.RateLimit, "rate-limit", 0, "The probability, 0 to 1, that a request is refused with a 429.")
	fs.DurationVar(&c.faults.RetryAfter, "retry-after", sandbox.DefaultRetryAfter, "The Retry-After of rate limits.")
	fs.StringVar(&c.account, "account-id", "",
		"The account the sandbox answers to (GET /v1/account); acct_ and 16 random letters and digits when empty.")
	fs.BoolVar(&c.idempotency, "idempotency", true,
		"Honour idempotency keys. With --idempotency=false every create request is a new charge, "+
			"which proves that a client never sends the same payment twice.")
	fs.DurationVar(&c.searchLag, "search-lag", 0,
		"How long a new payment intent stays invisible to search and lookups, like Stripe's search index.")
	fs.DurationVar(&c.refundDelay, "refund-settle-delay", 0,
		"How long a new refund stays pending before it succeeds by itself; 0 makes refunds succeed at once.")
	fs.BoolVar(&c.amountTooLargeCode, "refund-amount-too-large-code", true,
		"Refuse a refund beyond what is left with the code amount_too_large. With =false it is refused as Stripe "+
			"answers it: invalid_request_error on param amount, with its message and no code.")
	fs.Float64Var(&c.limits.Writes, "write-rate", 0,
		"The create requests per second accepted, with a burst of the rate rounded up; beyond, 429. 0 is unlimited.")
	fs.Float64Var(&c.limits.Searches, "search-rate", 0,
		"The search and lookup requests per second accepted, with a burst of the rate rounded up; beyond, 429. 0 is unlimited.")
	fs.Float64Var(&c.limits.Reads, "read-rate", 0,
		"The read requests per second accepted (every GET of /v1 but search, and GET /http/list), "+
			"with a burst of the rate rounded up; beyond, 429. 0 is unlimited.")
	fs.Func("require-action",
		"A payment method whose intents are left in requires_action (waiting for 3-D Secure), off_session or not; "+
			"comma-separated, repeatable. Any name is accepted, such as pm_card_visa or pm_card_forced3ds. "+
			"pm_card_authenticationRequired and pm_card_threeDSecureRequired need no flag: they are declined "+
			"with authentication_required off-session and wait in requires_action on-session.",
		func(v string) error {
			for pm := range strings.SplitSeq(v, ",") {
				pm = strings.TrimSpace(pm)
				if pm == "" || !validPaymentMethod(pm) {
					return fmt.Errorf("invalid payment method %q: use letters, digits and _", pm)
				}
				c.requireAction = append(c.requireAction, pm)
			}
			return nil
		})
	addWebhookFlags(fs, &c.webhooks)
	live := fs.Bool("live-rate-limits", false,
		"Stripe's live-mode rate limits: 100 writes, 20 searches and 100 reads per second. "+
			"An explicit --write-rate, --search-rate or --read-rate wins over its part of the preset.")

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fmt.Fprintln(stdout, "Usage: sandbox [flags]")
			fs.PrintDefaults()
			return nil, nil
		}
		return nil, usageError{err}
	}
	if fs.NArg() > 0 {
		return nil, usageError{fmt.Errorf("unexpected arguments: %q", fs.Args())}
	}
	if *live {
		c.limits = livePreset(fs, c.limits)
	}
	if c.searchLag < 0 {
		return nil, usageError{fmt.Errorf("--search-lag must not be negative, got %s", c.searchLag)}
	}
	if c.refundDelay < 0 {
		return nil, usageError{fmt.Errorf("--refund-settle-delay must not be negative, got %s", c.refundDelay)}
	}
	if err := c.webhooks.finish(os.Getenv); err != nil {
		return nil, usageError{err}
	}
	for _, p := range []struct {
		flag  string
		value float64
	}{
		{"error-before-commit", c.faults.ErrorBeforeCommit},
		{"error-after-commit", c.faults.ErrorAfterCommit},
		{"rate-limit", c.faults.RateLimit},
	} {
		// Written so that NaN is refused too.
		if !(p.value >= 0 && p.value <= 1) {
			return nil, usageError{fmt.Errorf("--%s must be a probability between 0 and 1, got %v", p.flag, p.value)}
		}
	}
	for _, r := range []struct {
		flag  string
		value float64
	}{
		{"write-rate", c.limits.Writes},
		{"search-rate", c.limits.Searches},
		{"read-rate", c.limits.Reads},
	} {
		if !(r.value >= 0 && r.value <= math.MaxFloat64) {
			return nil, usageError{fmt.Errorf("--%s must be a finite number of requests per second, 0 or more, got %v",
				r.flag, r.value)}
		}
	}
	if !c.allowNonLoopback {
		if err := checkLoopback(c.addr); err != nil {
			return nil, usageError{err}
		}
	}
	return &c, nil
}

// livePreset returns limits with Stripe's live-mode rates in place of the
// rates whose flag fs did not set.
func livePreset(fs *flag.FlagSet, limits sandbox.RateLimits) sandbox.RateLimits {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	preset := sandbox.LiveRateLimits()
	for _, r := range []struct {
		flag     string
		from, to *float64
	}{
		{"write-rate", &preset.Writes, &limits.Writes},
		{"search-rate", &preset.Searches, &limits.Searches},
		{"read-rate", &preset.Reads, &limits.Reads},
	} {
		if !set[r.flag] {
			*r.to = *r.from
		}
	}
	return limits
}

// validPaymentMethod reports whether pm is letters, digits and '_' only,
// like Stripe's payment method identifiers.
func validPaymentMethod(pm string) bool {
	for _, c := range pm {
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// checkLoopback returns an error unless addr's host is a loopback IP address
// or localhost.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("invalid --addr %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); (ip != nil && ip.IsLoopback()) || host == "localhost" {
		return nil
	}
	return fmt.Errorf("refusing to listen on %q, which is not a loopback address: the sandbox accepts any "+
		"sk_test_ key, so pass --allow-non-loopback to expose it anyway", addr)
}

// run serves the sandbox until ctx is done, then shuts the server down
// gracefully. It writes the listening line to stdout and logs to stderr.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	return runLogging(ctx, args, stdout, os.Stderr)
}

// runLogging is run with the logs written to stderr.
func runLogging(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stdout)
	if err != nil || cfg == nil {
		return err
	}
	opts := []sandbox.Option{sandbox.WithIdempotency(cfg.idempotency), sandbox.WithSearchLag(cfg.searchLag),
		sandbox.WithRefundSettleDelay(cfg.refundDelay)}
	opts = append(opts, cfg.webhooks.options()...)
	if !cfg.amountTooLargeCode {
		opts = append(opts, sandbox.WithoutAmountTooLargeCode())
	}
	if cfg.account != "" {
		opts = append(opts, sandbox.WithAccount(cfg.account))
	}
	engine := sandbox.NewEngine(opts...)
	// Stops the webhook goroutine.
	defer engine.Close()
	if err := engine.SetFaults(cfg.faults); err != nil {
		return usageError{err}
	}
	if err := engine.SetRateLimits(cfg.limits); err != nil {
		return usageError{err}
	}
	for _, pm := range cfg.requireAction {
		engine.RequireAction(pm)
	}

	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("cannot listen: %w", err)
	}
	// localhost may resolve to something else: check what was bound.
	if tcp, ok := ln.Addr().(*net.TCPAddr); ok && !cfg.allowNonLoopback && !tcp.IP.IsLoopback() {
		_ = ln.Close()
		return usageError{fmt.Errorf("refusing to serve on %s, which is not a loopback address; "+
			"pass --allow-non-loopback to expose it anyway", tcp)}
	}

	logger := slog.New(slog.NewTextHandler(stderr, nil))
	srv := &http.Server{
		Handler:           sandbox.NewServer(engine, sandbox.ServerOptions{Logger: logger}),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelError),
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	logger.Info("Serving sandbox", "addr", ln.Addr().String(), "errorBeforeCommit", cfg.faults.ErrorBeforeCommit,
		"errorAfterCommit", cfg.faults.ErrorAfterCommit, "rateLimit", cfg.faults.RateLimit,
		"retryAfter", cfg.faults.RetryAfter, "latencyMin", cfg.faults.LatencyMin, "latencyMax", cfg.faults.LatencyMax,
		"account", engine.Account(), "idempotency", cfg.idempotency, "searchLag", cfg.searchLag,
		"writeRate", cfg.limits.Writes, "searchRate", cfg.limits.Searches, "readRate", cfg.limits.Reads, "requireAction", cfg.requireAction,
		"refundSettleDelay", cfg.refundDelay, "refundAmountTooLargeCode", cfg.amountTooLargeCode)
	logger.Info("Serving bank debits and webhooks", cfg.webhooks.logAttrs()...)
	if _, err := fmt.Fprintf(stdout, "sandbox listening on http://%s\n", ln.Addr()); err != nil {
		_ = srv.Close()
		return fmt.Errorf("cannot announce the address: %w", err)
	}

	select {
	case err := <-served:
		return fmt.Errorf("cannot serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("Shutting down sandbox")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("cannot shut down gracefully: %w", err)
	}
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("cannot serve: %w", err)
	}
	return nil
}
