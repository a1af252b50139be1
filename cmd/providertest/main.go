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

// Command providertest certifies a payment service against the operator's
// HTTP contract (docs/providers.md): it runs the rules of package
// providertest, each of which sends real charges under keys of its own, and
// prints a table of the results. It exits 0 when no rule failed, 1 when one
// did, and 2 for an invalid command line.
//
//	providertest --url URL [--lookup-url URL] [--refund-url URL] [--list-url URL] [--token-file FILE] [--timeout 30s]
//
// The bearer token is read from --token-file, or else from the
// PROVIDERTEST_TOKEN environment variable; it is never printed. Point it at a
// test account: every rule charges Options.Amount, the refund rules, run
// with --refund-url, give (part of) their own charges back, and the list
// rules, run with --list-url, list them. The pending rule runs with
// --pending-payment-method, a payment method the service settles later; the
// events rule runs only from a Go test (providertest.Options.Events).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/idempotency-dev/paymentjob-operator/pkg/providertest"
)

// tokenEnv names the environment variable that holds the bearer token when
// --token-file is not given.
const tokenEnv = "PROVIDERTEST_TOKEN"

// Exit codes.
const (
	exitPassed = 0
	exitFailed = 1
	exitUsage  = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the command with args and the environment getenv, prints the
// table on stdout and errors on stderr, and returns the exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	opts, err := parseFlags(args, getenv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return exitPassed
	}
	if err != nil {
		fmt.Fprintln(stderr, "providertest:", err)
		return exitUsage
	}
	results, err := providertest.Check(ctx, opts)
	if err != nil {
		fmt.Fprintln(stderr, "providertest:", err)
		return exitUsage
	}
	if err := writeTable(stdout, results); err != nil {
		fmt.Fprintln(stderr, "providertest:", err)
		return exitFailed
	}
	if providertest.Failed(results) {
		return exitFailed
	}
	return exitPassed
}

// parseFlags returns the Options of the command line; flag.ErrHelp, after
// the usage is printed on stdout, when help is asked for.
func parseFlags(args []string, getenv func(string) string, stdout io.Writer) (providertest.Options, error) {
	var opts providertest.Options
	var tokenFile string
	var inFlight providertest.InFlight
	var pending providertest.Pending
	fs := flag.NewFlagSet("providertest", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&opts.URL, "url", "", "The charge endpoint of the payment service (spec.http.url). Required.")
	fs.StringVar(&opts.LookupURL, "lookup-url", "",
		"The lookup endpoint (spec.http.lookupURL), if the service has one; without it the lookup rule is skipped.")
	fs.StringVar(&opts.RefundURL, "refund-url", "",
		"The refund endpoint (spec.http.refundURL), if the service has one; without it the refund rules are skipped.")
	fs.StringVar(&opts.ListURL, "list-url", "",
		"The list endpoint (spec.http.listURL), if the service has one; without it the list rules are skipped.")
	fs.StringVar(&tokenFile, "token-file", "",
		"A file holding the bearer token; without it the token is read from $"+tokenEnv+". "+
			"Without a token the credentials rule is skipped.")
	fs.DurationVar(&opts.Timeout, "timeout", providertest.DefaultTimeout, "How long each request may take.")
	fs.StringVar(&opts.SucceedingPaymentMethod, "succeeding-payment-method", providertest.DefaultSucceedingPaymentMethod,
		"A payment method the service charges.")
	fs.StringVar(&opts.DecliningPaymentMethod, "declining-payment-method", providertest.DefaultDecliningPaymentMethod,
		"A payment method the service declines.")
	fs.StringVar(&opts.Currency, "currency", providertest.DefaultCurrency, "The currency of every charge.")
	fs.Int64Var(&opts.Amount, "amount", providertest.DefaultAmount, "The amount of every charge, in minor units.")
	fs.StringVar(&opts.KeyPrefix, "key-prefix", "",
		"The prefix of every idempotency key sent; a random one per run when empty.")
	fs.StringVar(&inFlight.PaymentMethod, "slow-payment-method", "",
		"A payment method the service takes longer than --in-flight-after to charge; "+
			"without it the in-flight rule is skipped.")
	fs.DurationVar(&inFlight.After, "in-flight-after", providertest.DefaultInFlightAfter,
		"How long after the first request with the slow payment method the second is sent.")
	fs.StringVar(&pending.PaymentMethod, "pending-payment-method", "",
		"A payment method the service answers processing and settles later (a bank debit); "+
			"without it the pending rule is skipped.")
	fs.StringVar(&pending.FailingPaymentMethod, "pending-failing-payment-method", "",
		"A payment method the service answers processing and fails later, checked by the pending rule.")
	fs.DurationVar(&pending.Within, "pending-within", providertest.DefaultPendingWithin,
		"How long the pending rule waits for a processing payment to settle.")

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fmt.Fprintln(stdout, "Usage: providertest --url URL [flags]")
			fs.PrintDefaults()
		}
		return opts, err
	}
	switch {
	case fs.NArg() > 0:
		return opts, fmt.Errorf("unexpected arguments: %q", fs.Args())
	case opts.URL == "":
		return opts, errors.New("--url is required")
	case opts.Amount <= 0:
		return opts, fmt.Errorf("--amount must be greater than zero, got %d", opts.Amount)
	case opts.Timeout <= 0 || inFlight.After <= 0 || pending.Within <= 0:
		return opts, errors.New("--timeout, --in-flight-after and --pending-within must be greater than zero")
	case pending.PaymentMethod == "" && pending.FailingPaymentMethod != "":
		return opts, errors.New("--pending-failing-payment-method needs --pending-payment-method")
	}
	if inFlight.PaymentMethod != "" {
		opts.InFlight = &inFlight
	}
	if pending.PaymentMethod != "" {
		opts.Pending = &pending
	}
	opts.Token = getenv(tokenEnv)
	if tokenFile != "" {
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			// The error names the file, never its content.
			return opts, fmt.Errorf("cannot read --token-file: %w", err)
		}
		opts.Token = string(b)
	}
	opts.Token = strings.TrimSpace(opts.Token)
	return opts, nil
}

// writeTable prints one line per result, rule, result and message, and a
// count of each result.
func writeTable(w io.Writer, results []providertest.Result) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tRESULT\tMESSAGE")
	counts := map[providertest.Status]int{}
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Rule, r.Status, r.Message)
		counts[r.Status]++
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("cannot print the results: %w", err)
	}
	_, err := fmt.Fprintf(w, "\n%d passed, %d failed, %d skipped\n",
		counts[providertest.Pass], counts[providertest.Fail], counts[providertest.Skip])
	return err
}
