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

package ledger

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	appendsTotal = counter("paymentjob_ledger_appends_total",
		"Writes that appended outcomes to the ledger; one write carries every outcome waiting for it.")
	appendConflictsTotal = counter("paymentjob_ledger_append_conflicts_total",
		"Ledger appends retried because another process wrote the page first.")
	pageRereadsTotal = counter("paymentjob_ledger_page_rereads_total",
		"Ledger pages read again because another process wrote them.")
	prunedPagesTotal = counter("paymentjob_ledger_pruned_pages_total",
		"Ledger pages deleted by the retention.")
	indexRebuildsTotal = counter("paymentjob_ledger_index_rebuilds_total",
		"Ledger indexes rebuilt from a fresh list of the pages because resourceVersions went backwards (an etcd restored from a snapshot).")
	etcdQuotaBytes = prometheus.NewGauge(prometheus.GaugeOpts{Name: "paymentjob_etcd_quota_bytes",
		Help: "The etcd quota of the cluster (etcd's --quota-backend-bytes) as the manager was told it (--etcd-quota-bytes), " +
			"which the alerts compare paymentjob_ledger_bytes with; 0 when unknown."})
	sizes = &sizeCollector{
		bytes: prometheus.NewDesc("paymentjob_ledger_bytes",
			"Bytes the outcome ledger's pages take in etcd as the API server stores them: the sum of each page's JSON encoding, "+
				"as of the copies this process last read, wrote or saw deleted. etcd's own overhead (keys, indexes, free pages) and "+
				"the old revisions of each page it keeps until compaction come on top. Every replica sees the same pages: aggregate with max().",
			nil, nil),
		entries: prometheus.NewDesc("paymentjob_ledger_entries",
			"Outcomes on the ledger's pages, as of the copies this process last read, wrote or saw deleted. Aggregate with max().",
			nil, nil),
		pages: prometheus.NewDesc("paymentjob_ledger_pages",
			"Ledger pages this process knows of: read, written or reported by its watch, less those deleted. Aggregate with max().",
			nil, nil),
		running: map[*Ledger]struct{}{},
	}
)

// DefaultEtcdQuotaBytes is etcd's default quota, 2 GiB: the size of its
// database at which etcd stops accepting writes.
const DefaultEtcdQuotaBytes = 2 << 30

// SetEtcdQuota exports the etcd quota of the cluster, in bytes, as
// paymentjob_etcd_quota_bytes; 0 is unknown, and the alerts that compare
// the ledger with the quota stay silent.
func SetEtcdQuota(bytes int64) {
	etcdQuotaBytes.Set(float64(bytes))
}

// sizeCollector exports the size of the ledgers this process runs, read
// from their indexes at each scrape: no API request. A manager runs one
// ledger; tests run several, and the gauges report the largest figures.
// No ledger running (--ledger=false), no series.
type sizeCollector struct {
	bytes, entries, pages *prometheus.Desc

	mu      sync.Mutex
	running map[*Ledger]struct{}
}

// track adds l to the ledgers reported, until the returned func is called.
func (c *sizeCollector) track(l *Ledger) (untrack func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running[l] = struct{}{}
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.running, l)
	}
}

// Describe implements prometheus.Collector.
func (c *sizeCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.bytes
	ch <- c.entries
	ch <- c.pages
}

// Collect implements prometheus.Collector.
func (c *sizeCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.running) == 0 {
		return
	}
	var most footprint
	for l := range c.running {
		f := l.footprint()
		most = footprint{bytes: max(most.bytes, f.bytes), entries: max(most.entries, f.entries), pages: max(most.pages, f.pages)}
	}
	ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.GaugeValue, float64(most.bytes))
	ch <- prometheus.MustNewConstMetric(c.entries, prometheus.GaugeValue, float64(most.entries))
	ch <- prometheus.MustNewConstMetric(c.pages, prometheus.GaugeValue, float64(most.pages))
}

// footprint is the size of the ledger as one process's index knows it.
type footprint struct {
	// bytes is the pages' size as stored (storedSize).
	bytes int
	// entries counts the outcomes on the pages.
	entries int
	// pages counts the pages.
	pages int
}

// footprint adds up the pages of the index: each as the copy this process
// last read or wrote. A page the watch reported and this process has not
// read yet counts as a page, with the bytes and entries of the copy read
// before (none for a new page) until it is read, before the next Find or
// append; pages retention or the watch saw deleted are gone from it.
func (l *Ledger) footprint() footprint {
	l.mu.Lock()
	defer l.mu.Unlock()
	f := footprint{pages: len(l.pages)}
	for _, p := range l.pages {
		f.bytes += p.bytes
		f.entries += len(p.hashes)
	}
	return f
}

// counter is a counter of the ledger, not registered yet.
func counter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

// Collectors returns every collector this package registers in
// controller-runtime's metrics registry.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{appendsTotal, appendConflictsTotal, pageRereadsTotal, prunedPagesTotal, indexRebuildsTotal,
		sizes, etcdQuotaBytes}
}

func init() {
	metrics.Registry.MustRegister(Collectors()...)
}
