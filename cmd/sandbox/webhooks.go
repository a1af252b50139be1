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
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/pkg/sandbox"
)

// The flags of bank debits and signed webhooks. The webhook secret is read
// from a file or from the environment, never from the command line, which
// other users of the machine can read, and it is never logged.

// webhookSecretEnv holds the webhook secret when --webhook-secret-file is
// not given.
const webhookSecretEnv = "SANDBOX_WEBHOOK_SECRET"

// webhookFlags are the parsed flags of debits and webhooks.
type webhookFlags struct {
	debitDelay time.Duration
	hooks      sandbox.WebhookConfig
	secretFile string
	format     string
}

// addWebhookFlags defines the flags of debits and webhooks on fs.
func addWebhookFlags(fs *flag.FlagSet, w *webhookFlags) {
	fs.DurationVar(&w.debitDelay, "debit-settle-after", sandbox.DefaultDebitSettleDelay,
		"How long a bank debit (pm_success_de, pm_usBankAccount_success, ...) stays processing before it succeeds or fails.")
	fs.StringVar(&w.hooks.URL, "webhook-url", "",
		"Send a signed event for every change (payment processing, succeeded, failed; refunds; disputes) to this URL.")
	fs.StringVar(&w.secretFile, "webhook-secret-file", "",
		"A file holding the webhook signing secret; without it, the environment variable "+webhookSecretEnv+". "+
			"The secret is never taken from the command line.")
	fs.StringVar(&w.format, "webhook-format", string(sandbox.WebhookFormatStripe),
		"stripe: Stripe's events signed with Stripe-Signature; http: the HTTP contract's events signed with Paymentjob-Signature.")
	fs.Uint64Var(&w.hooks.Seed, "webhook-seed", 0, "Seed the random source of the webhook faults, for reproducible runs; 0 draws one.")
	for _, p := range []struct {
		name, usage string
		into        *float64
	}{
		{"webhook-duplicate", "The probability that an event is sent twice", &w.hooks.Faults.Duplicate},
		{"webhook-reorder", "The probability that an event is held and sent after the next one", &w.hooks.Faults.Reorder},
		{"webhook-drop", "The probability that an event is never sent", &w.hooks.Faults.Drop},
		{"webhook-bad-signature", "The probability that an event is signed with a wrong secret", &w.hooks.Faults.BadSignature},
	} {
		fs.Func(p.name, p.usage+": 0 to 1, or a percentage such as 20%.", func(v string) error {
			f, err := probability(v)
			*p.into = f
			return err
		})
	}
	fs.DurationVar(&w.hooks.Faults.Delay, "webhook-delay", 0, "Wait this long before sending each event.")
}

// probability parses "0.2" or "20%".
func probability(v string) (float64, error) {
	scale := 1.0
	if s, ok := strings.CutSuffix(strings.TrimSpace(v), "%"); ok {
		v, scale = s, 100
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, errors.New("not a number")
	}
	f /= scale
	// Written so that NaN is refused too.
	if !(f >= 0 && f <= 1) {
		return 0, errors.New("must be a probability between 0 and 1 (or 0% and 100%)")
	}
	return f, nil
}

// finish checks the flags and reads the secret; getenv reads the
// environment. Its errors never contain the secret.
func (w *webhookFlags) finish(getenv func(string) string) error {
	if w.debitDelay < 0 {
		return fmt.Errorf("--debit-settle-after must not be negative, got %s", w.debitDelay)
	}
	w.hooks.Format = sandbox.WebhookFormat(w.format)
	if w.hooks.URL == "" {
		if w.secretFile != "" {
			return errors.New("--webhook-secret-file needs --webhook-url")
		}
		return nil
	}
	if w.secretFile != "" {
		b, err := os.ReadFile(w.secretFile)
		if err != nil {
			return fmt.Errorf("cannot read --webhook-secret-file: %w", err)
		}
		w.hooks.Secret = strings.TrimSpace(string(b))
	} else {
		w.hooks.Secret = strings.TrimSpace(getenv(webhookSecretEnv))
	}
	if w.hooks.Secret == "" {
		return fmt.Errorf("--webhook-url needs a secret: --webhook-secret-file or %s", webhookSecretEnv)
	}
	// The Engine's own checks (URL, format, faults).
	if err := w.hooks.Validate(); err != nil {
		return fmt.Errorf("invalid webhooks: %w", err)
	}
	return nil
}

// options are the Engine options of the flags.
func (w *webhookFlags) options() []sandbox.Option {
	opts := []sandbox.Option{sandbox.WithDebitSettleDelay(w.debitDelay)}
	if w.hooks.URL != "" {
		opts = append(opts, sandbox.WithWebhooks(w.hooks))
	}
	return opts
}

// logAttrs are what the log says of the flags: never the secret, and the
// URL without any user information.
func (w *webhookFlags) logAttrs() []any {
	attrs := make([]any, 0, 9)
	attrs = append(attrs, slog.Duration("debitSettleAfter", w.debitDelay))
	if w.hooks.URL == "" {
		return attrs
	}
	shown := "(invalid)"
	if u, err := url.Parse(w.hooks.URL); err == nil {
		u.User = nil
		shown = u.String()
	}
	f := w.hooks.Faults
	return append(attrs, slog.String("webhookURL", shown), slog.String("webhookFormat", string(w.hooks.Format)),
		slog.Uint64("webhookSeed", w.hooks.Seed), slog.Float64("webhookDuplicate", f.Duplicate),
		slog.Float64("webhookReorder", f.Reorder), slog.Float64("webhookDrop", f.Drop),
		slog.Float64("webhookBadSignature", f.BadSignature), slog.Duration("webhookDelay", f.Delay))
}
