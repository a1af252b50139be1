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

package operator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/audit"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/engine"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentjob"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentprovider"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentreconciliation"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/paymentrefund"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/rewind"
	"github.com/idempotency-dev/paymentjob-operator/internal/controllers/ttl"
	"github.com/idempotency-dev/paymentjob-operator/internal/events"
	"github.com/idempotency-dev/paymentjob-operator/internal/ledger"
	"github.com/idempotency-dev/paymentjob-operator/internal/payment/egress"
	"github.com/idempotency-dev/paymentjob-operator/internal/providercache"
)

// Defaults of Options, and of the manager's flags: the Reconciler's are the
// engine's (its defaults.go), the refund watch's the paymentrefund
// package's, the audit's the audit package's; the manager's own settings
// are in manager.go.
const (
	DefaultClaimLease      = engine.DefaultClaimLease
	DefaultProviderTimeout = engine.DefaultProviderTimeout
	// DefaultConcurrency is the number of jobs, and of refunds, worked on
	// at once (--max-concurrent-reconciles).
	DefaultConcurrency    = 10
	DefaultBackoffInitial = engine.DefaultBackoffInitial
	DefaultBackoffMax     = engine.DefaultBackoffMax
	// DefaultKeyRetention is how long providers are trusted to remember an
	// idempotency key (Stripe: 24 hours).
	DefaultKeyRetention = engine.DefaultKeyRetention
	// DefaultLedgerRetention is how long outcomes stay in the ledger.
	DefaultLedgerRetention = ledger.DefaultRetention
	// DefaultAuditInterval is the time between audits of the admission
	// policies and of the jobs with the finished label.
	DefaultAuditInterval = audit.DefaultInterval
	// DefaultRefundRecheckInterval is the time between two reads of the
	// Completed refunds at their providers.
	DefaultRefundRecheckInterval = paymentrefund.DefaultRefundRecheckInterval
	// DefaultRefundWatchPeriod is how long after it completed a refund is
	// read again, to report one that failed at the provider later.
	DefaultRefundWatchPeriod = paymentrefund.DefaultRefundWatchPeriod
	// DefaultReconciliationSettleMargin is how long after its window ends
	// a PaymentReconciliation runs, and how long before its start a window
	// without an end ends: the payments of the last minutes may not have
	// their outcome recorded yet.
	DefaultReconciliationSettleMargin = paymentreconciliation.DefaultSettleMargin
	// DefaultEtcdQuotaBytes is etcd's default quota (2 GiB), which the
	// alerts compare the ledger's size with.
	DefaultEtcdQuotaBytes = ledger.DefaultEtcdQuotaBytes
)

// Options configure the operator in a manager. The zero value is the
// manager's defaults, with the outcome ledger on.
type Options struct {
	// Holder names this process in claims; "" is the POD_NAME (or host
	// name) and a random id.
	Holder string
	// ClaimLease is how long a claim is held before another process may
	// take it over; it must be longer than ProviderTimeout.
	ClaimLease time.Duration
	// ProviderTimeout bounds one provider call unless a PaymentProvider
	// sets timeoutSeconds.
	ProviderTimeout time.Duration
	// BackoffInitial and BackoffMax pace the retries after uncertain
	// provider outcomes: BackoffInitial doubling up to BackoffMax.
	BackoffInitial, BackoffMax time.Duration
	// MaxConcurrentReconciles is the number of jobs worked on at once.
	MaxConcurrentReconciles int
	// KeyRetention is how long providers remember a key; a job Processing
	// for longer is looked up before it is charged again. Zero is
	// DefaultKeyRetention; negative never looks up.
	KeyRetention time.Duration
	// InsecureProviderHosts may be reached over plain http and at loopback
	// and private addresses (--insecure-provider-hosts).
	InsecureProviderHosts []string
	// DisableLedger turns the outcome ledger off (--ledger=false).
	DisableLedger bool
	// LedgerBackend is where the outcome ledger is kept: LedgerCRD (the
	// default, "") or LedgerPostgres, configured by Postgres.
	LedgerBackend LedgerBackend
	// Postgres configures the PostgreSQL ledger (LedgerBackend
	// LedgerPostgres).
	Postgres PostgresLedger
	// LedgerRetention is how long outcomes stay in the ledger; zero is
	// DefaultLedgerRetention.
	LedgerRetention time.Duration
	// EtcdQuotaBytes is the etcd quota of the cluster (etcd's
	// --quota-backend-bytes), exported as paymentjob_etcd_quota_bytes for
	// the alerts on the ledger's size. Zero is DefaultEtcdQuotaBytes;
	// negative is unknown, exported as 0, and those alerts stay silent.
	EtcdQuotaBytes int64
	// TTLAfterFinished deletes finished jobs this long after they finished
	// unless they say otherwise; nil keeps them. Needs the ledger.
	TTLAfterFinished *time.Duration
	// AuditInterval is the time between audits; zero is
	// DefaultAuditInterval.
	AuditInterval time.Duration
	// RefundRecheckInterval and RefundWatchPeriod: Completed refunds are
	// read again at their providers every RefundRecheckInterval for
	// RefundWatchPeriod after they completed; one the provider failed since
	// is set Failed (RefundFailedAfterSuccess). Zero is the default.
	RefundRecheckInterval, RefundWatchPeriod time.Duration
	// ReconciliationSettleMargin: see DefaultReconciliationSettleMargin;
	// nil is the default, zero waits for nothing (tests, demos).
	ReconciliationSettleMargin *time.Duration
	// EventsBindAddress serves the signed provider events endpoint (POST
	// /events/<namespace>/<provider>) on every replica; "" and "0" turn it
	// off. An event only wakes the payments it names: they read their
	// provider before they write anything.
	EventsBindAddress string
	// Namespaces restrict the collector of finished jobs and the audit of
	// finished labels, as CacheOptions restricts the cache; nil is every
	// namespace.
	Namespaces []string
}

// Setup adds the operator to mgr, whose cache must have been made with
// CacheOptions. It refuses options that could charge twice, such as a
// claim lease shorter than the provider timeout.
func Setup(mgr ctrl.Manager, opts Options) error {
	opts, err := opts.complete()
	if err != nil {
		return err
	}
	if err := engine.IndexFields(mgr); err != nil {
		return err
	}
	ledger.SetEtcdQuota(opts.EtcdQuotaBytes)
	restores, err := watchForRestores(mgr, opts)
	if err != nil {
		return err
	}
	policy := &egress.Policy{InsecureHosts: opts.InsecureProviderHosts}
	adapters := &providercache.ProviderCache{SecretReader: mgr.GetClient(), Build: providercache.NewAdapterFactory(policy)}
	if err := mgr.Add(adapters); err != nil {
		return fmt.Errorf("cannot add the provider cache: %w", err)
	}
	var (
		outcomes engine.OutcomeLedger
		// An interface: nil without the ledger, never a nil pointer in it.
		collector engine.Scheduler
	)
	if !opts.DisableLedger {
		if outcomes, err = setupLedger(mgr, opts, restores.Rewound); err != nil {
			return err
		}
	}
	jobs := paymentjob.Kind()
	refunds := paymentrefund.Kind(paymentrefund.Deps{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Ledger: outcomes})
	kinds := []engine.AnyKind{jobs, refunds}
	if outcomes != nil {
		defaultTTL := time.Duration(-1)
		if opts.TTLAfterFinished != nil {
			defaultTTL = *opts.TTLAfterFinished
		}
		c := &ttl.FinishedJobCollector{
			Kinds:  kinds,
			Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Ledger: outcomes,
			DefaultTTL: defaultTTL, Clock: clock.RealClock{}, Namespaces: opts.Namespaces,
		}
		collector = c
		if err := mgr.Add(c); err != nil {
			return fmt.Errorf("cannot add the collector of finished jobs: %w", err)
		}
	}
	if err := (&paymentprovider.Reconciler{
		Kinds:        kinds,
		Client:       mgr.GetClient(),
		SecretReader: mgr.GetClient(),
		APIReader:    mgr.GetAPIReader(),
		Adapters:     adapters,
		Egress:       policy,
		Recorder:     mgr.GetEventRecorder("paymentprovider-controller"),
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("cannot set up the PaymentProvider controller: %w", err)
	}

	var (
		wakers events.Wakers
		// jobsReconciler reads a payment a refund event names.
		jobsReconciler *engine.Reconciler
	)
	auditor := &audit.Auditor{
		Reader:     mgr.GetAPIReader(),
		Recorder:   mgr.GetEventRecorder("paymentjob-audit"),
		Interval:   opts.AuditInterval,
		Namespaces: opts.Namespaces,
	}
	// One engine, two kinds: charges and refunds share every setting.
	for _, kind := range []struct {
		kind     engine.AnyKind
		recorder string
	}{{jobs, "paymentjob-controller"}, {refunds, "paymentrefund-controller"}} {
		r := &engine.Reconciler{
			Kind:                    kind.kind,
			Attribution:             auditor,
			Ledger:                  outcomes,
			Collector:               collector,
			APIReader:               mgr.GetAPIReader(),
			Client:                  mgr.GetClient(),
			Recorder:                mgr.GetEventRecorder(kind.recorder),
			Providers:               adapters,
			Clock:                   clock.RealClock{},
			Holder:                  opts.Holder,
			ClaimLease:              opts.ClaimLease,
			ProviderTimeout:         opts.ProviderTimeout,
			Backoff:                 engine.Backoff{Initial: opts.BackoffInitial, Max: opts.BackoffMax},
			KeyRetention:            opts.KeyRetention,
			MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
		}
		if err := r.SetupWithManager(mgr); err != nil {
			return fmt.Errorf("cannot set up the %s controller: %w", kind.kind.Name(), err)
		}
		wakers = append(wakers, r)
		if kind.kind.Name() == jobs.Name() {
			jobsReconciler = r
		}
		if kind.kind.Name() == refunds.Name() {
			watch := &paymentrefund.RefundWatch{Refunds: r, Jobs: jobsReconciler, Reader: mgr.GetAPIReader(),
				Interval: opts.RefundRecheckInterval, Period: opts.RefundWatchPeriod, Namespaces: opts.Namespaces}
			if err := mgr.Add(watch); err != nil {
				return fmt.Errorf("cannot add the refund watch: %w", err)
			}
			// A refund event reads the refunds it names at once.
			wakers = append(wakers, watch)
		}
	}
	if err := (&paymentreconciliation.Reconciler{
		Client:    mgr.GetClient(),
		Reader:    mgr.GetAPIReader(),
		Providers: adapters,
		Ledger:    reconciliationLedger(outcomes, mgr),
		Recorder:  mgr.GetEventRecorder("paymentreconciliation-controller"),
		Clock:     clock.RealClock{},
		// A window that ends now leaves out the payments whose outcome
		// the cluster has not recorded yet.
		SettleMargin: *opts.ReconciliationSettleMargin,
		Namespaces:   opts.Namespaces,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("cannot set up the PaymentReconciliation controller: %w", err)
	}
	if err := addEvents(mgr, opts, adapters, wakers); err != nil {
		return err
	}
	if err := auditor.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("cannot set up the audit: %w", err)
	}
	if err := mgr.AddReadyzCheck("informers", engine.InformersSynced(mgr.GetCache())); err != nil {
		return fmt.Errorf("cannot add the informers' ready check: %w", err)
	}
	return nil
}

// ErrEtcdRestored is wrapped by the error the manager stops with when it
// notices that etcd was restored from a snapshot under it: resourceVersions
// went backwards (a list of the jobs or refunds older than a version seen,
// an object reported older than the cached copy, a ledger page older than
// the one indexed). Its caches cannot be trusted any more; the process
// must exit and start again (cmd/main.go exits with code 3).
var ErrEtcdRestored = rewind.ErrEtcdRestored

// watchForRestores adds to mgr the detector of an etcd restored under it
// (internal/controllers/rewind), on every replica: it stops the manager
// with ErrEtcdRestored.
func watchForRestores(mgr ctrl.Manager, opts Options) (*rewind.Detector, error) {
	var ns string
	if len(opts.Namespaces) > 0 {
		ns = opts.Namespaces[0]
	}
	d, err := rewind.New(mgr.GetAPIReader(), mgr.GetScheme(), rewind.Options{Namespace: ns},
		&paymentsv1alpha1.PaymentJob{}, &paymentsv1alpha1.PaymentRefund{})
	if err != nil {
		return nil, err
	}
	if err := d.WatchInformers(context.Background(), mgr.GetCache()); err != nil {
		return nil, err
	}
	if err := mgr.Add(d); err != nil {
		return nil, fmt.Errorf("cannot add the detector of a restored etcd: %w", err)
	}
	return d, nil
}

// complete fills in the defaults and refuses what could charge twice.
func (o Options) complete() (Options, error) {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&o.ClaimLease, DefaultClaimLease)
	def(&o.ProviderTimeout, DefaultProviderTimeout)
	def(&o.BackoffInitial, DefaultBackoffInitial)
	def(&o.BackoffMax, DefaultBackoffMax)
	def(&o.KeyRetention, DefaultKeyRetention)
	def(&o.LedgerRetention, DefaultLedgerRetention)
	def(&o.AuditInterval, DefaultAuditInterval)
	def(&o.RefundRecheckInterval, DefaultRefundRecheckInterval)
	def(&o.RefundWatchPeriod, DefaultRefundWatchPeriod)
	if o.ReconciliationSettleMargin == nil {
		margin := DefaultReconciliationSettleMargin
		o.ReconciliationSettleMargin = &margin
	}
	if *o.ReconciliationSettleMargin < 0 {
		return o, errors.New("the reconciliation settle margin must not be negative")
	}
	if o.KeyRetention < 0 {
		o.KeyRetention = 0
	}
	if o.LedgerBackend == "" {
		o.LedgerBackend = LedgerCRD
	}
	switch {
	case o.EtcdQuotaBytes == 0:
		o.EtcdQuotaBytes = DefaultEtcdQuotaBytes
	case o.EtcdQuotaBytes < 0:
		o.EtcdQuotaBytes = 0
	}
	if o.MaxConcurrentReconciles == 0 {
		o.MaxConcurrentReconciles = DefaultConcurrency
	}
	switch {
	case o.ProviderTimeout <= 0 || o.ClaimLease <= o.ProviderTimeout:
		return o, fmt.Errorf("the claim lease (%s) must be longer than the provider timeout (%s)", o.ClaimLease, o.ProviderTimeout)
	case o.RefundRecheckInterval < 0 || o.RefundWatchPeriod < 0:
		return o, fmt.Errorf("the refund recheck interval (%s) and watch period (%s) must be positive",
			o.RefundRecheckInterval, o.RefundWatchPeriod)
	case o.AuditInterval < 0:
		return o, fmt.Errorf("the audit interval (%s) must be positive", o.AuditInterval)
	}
	if err := o.checkLedger(); err != nil {
		return o, err
	}
	if o.Holder == "" {
		holder, err := HolderIdentity()
		if err != nil {
			return o, err
		}
		o.Holder = holder
	}
	return o, nil
}

// HolderIdentity names this process in claims: the pod name (POD_NAME, or
// the host name) and a random id, so a restarted process never mistakes an
// earlier process's claim for its own.
func HolderIdentity() (string, error) {
	name := os.Getenv("POD_NAME")
	if name == "" {
		host, err := os.Hostname()
		if err != nil {
			return "", fmt.Errorf("cannot read the host name: %w", err)
		}
		name = host
	}
	id := make([]byte, 4)
	if _, err := rand.Read(id); err != nil {
		return "", fmt.Errorf("cannot generate a process id: %w", err)
	}
	return name + "/" + hex.EncodeToString(id), nil
}

// addEvents adds the signed events endpoint, when opts asks for it, waking
// wakers.
func addEvents(mgr ctrl.Manager, opts Options, adapters *providercache.ProviderCache, wakers events.Wakers) error {
	if !events.Enabled(opts.EventsBindAddress) {
		return nil
	}
	if err := mgr.Add(&events.Server{Addr: opts.EventsBindAddress, Reader: mgr.GetClient(), Waker: wakers,
		Identities: events.CachedIdentities{Cache: adapters}, Log: mgr.GetLogger().WithName("events")}); err != nil {
		return fmt.Errorf("cannot add the events endpoint: %w", err)
	}
	return nil
}
