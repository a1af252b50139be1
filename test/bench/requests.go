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

// The API server's requests in a window: apiserver_request_total read from
// its /metrics, told apart by verb, resource and code, and summed into the
// figures the report shows.

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// The resources of the operator's API writes, as apiserver_request_total
// names them.
const (
	resourceJobs    = "paymentjobs"
	resourceRefunds = "paymentrefunds"
	resourceLedgers = "paymentledgers"
)

// verbCreate is a create in apiserver_request_total.
const verbCreate = "POST"

// noneCounted is the text of an empty list of counts.
const noneCounted = "none"

// requestKey is what the benchmark distinguishes of the API server's
// requests; the other labels of apiserver_request_total (version, scope,
// component, dry_run) are added up.
type requestKey struct {
	verb, group, resource, subresource, code string
}

// requestCounts are the API server's apiserver_request_total counters by
// requestKey.
type requestCounts map[requestKey]float64

// parseRequestCounts reads apiserver_request_total from the API server's
// /metrics.
func parseRequestCounts(r io.Reader) (requestCounts, error) {
	samples, err := parseSamples(r, "apiserver_request_total")
	if err != nil {
		return nil, err
	}
	if len(samples) == 0 {
		return nil, errors.New("no apiserver_request_total in the API server's metrics")
	}
	c := requestCounts{}
	for _, s := range samples {
		l := s.labels
		c[requestKey{verb: l["verb"], group: l["group"], resource: l["resource"], subresource: l["subresource"], code: l["code"]}] += s.value
	}
	return c, nil
}

// minus returns the counts added since before.
func (c requestCounts) minus(before requestCounts) requestCounts {
	d := requestCounts{}
	for k, v := range c {
		if n := v - before[k]; n != 0 {
			d[k] = n
		}
	}
	return d
}

// plus adds the counts of two windows.
func (c requestCounts) plus(o requestCounts) requestCounts { return addCounts(c, o) }

// addCounts adds two maps of counts key by key.
func addCounts[M ~map[K]float64, K comparable](a, b M) M {
	sum := make(M, max(len(a), len(b)))
	for k, v := range a {
		sum[k] += v
	}
	for k, v := range b {
		sum[k] += v
	}
	return sum
}

// filter returns the counts whose key satisfies keep.
func (c requestCounts) filter(keep func(requestKey) bool) requestCounts {
	f := requestCounts{}
	for k, v := range c {
		if keep(k) {
			f[k] = v
		}
	}
	return f
}

// sum adds the counts whose key satisfies keep.
func (c requestCounts) sum(keep func(requestKey) bool) float64 {
	var n float64
	for k, v := range c {
		if keep(k) {
			n += v
		}
	}
	return n
}

// isMutating reports whether an apiserver_request_total verb changes state.
func isMutating(verb string) bool {
	switch verb {
	case verbCreate, "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY":
		return true
	}
	return false
}

// isRead reports whether an apiserver_request_total verb is a GET or a LIST.
func isRead(verb string) bool { return verb == "GET" || verb == "LIST" }

// requestFigures are the API requests of a measured window.
type requestFigures struct {
	// jobWrites are the mutating requests on paymentjobs and its
	// subresources.
	jobWrites float64
	// refundWrites are the mutating requests on paymentrefunds and its
	// subresources.
	refundWrites float64
	// ledgerWrites are the creates, updates and deletes of paymentledgers
	// (the outcome ledger's pages).
	ledgerWrites float64
	// ledgerReads are the GETs and LISTs of paymentledgers; they are among
	// reads too.
	ledgerReads float64
	// eventPosts are the events created, core or events.k8s.io.
	eventPosts float64
	// reads are the GETs and LISTs of resources (not of /metrics, /version
	// or other non-resource paths).
	reads float64
	// conflicts are the requests answered 409, any verb and resource.
	conflicts float64
	// writes are the mutating requests on any resource.
	writes float64
}

// plus adds the figures of two windows.
func (f requestFigures) plus(o requestFigures) requestFigures {
	return requestFigures{
		jobWrites:    f.jobWrites + o.jobWrites,
		refundWrites: f.refundWrites + o.refundWrites,
		ledgerWrites: f.ledgerWrites + o.ledgerWrites,
		ledgerReads:  f.ledgerReads + o.ledgerReads,
		eventPosts:   f.eventPosts + o.eventPosts,
		reads:        f.reads + o.reads,
		conflicts:    f.conflicts + o.conflicts,
		writes:       f.writes + o.writes,
	}
}

// figures summarises a window's delta of apiserver_request_total.
func (c requestCounts) figures() requestFigures {
	return requestFigures{
		jobWrites:    c.sum(func(k requestKey) bool { return k.resource == resourceJobs && isMutating(k.verb) }),
		refundWrites: c.sum(func(k requestKey) bool { return k.resource == resourceRefunds && isMutating(k.verb) }),
		ledgerWrites: c.sum(func(k requestKey) bool { return k.resource == resourceLedgers && isMutating(k.verb) }),
		ledgerReads:  c.sum(func(k requestKey) bool { return k.resource == resourceLedgers && isRead(k.verb) }),
		eventPosts: c.sum(func(k requestKey) bool {
			return k.resource == "events" && k.subresource == "" && k.verb == verbCreate
		}),
		reads:     c.sum(func(k requestKey) bool { return k.resource != "" && isRead(k.verb) }),
		conflicts: c.sum(func(k requestKey) bool { return k.code == "409" }),
		writes:    c.sum(func(k requestKey) bool { return k.resource != "" && isMutating(k.verb) }),
	}
}

// breakdown lists the counts as "VERB resource[/subresource] code=N", the
// largest first, for the log of a phase.
func (c requestCounts) breakdown() string {
	type row struct {
		name string
		n    float64
	}
	agg := map[string]float64{}
	for k, v := range c {
		if k.resource == "" {
			continue
		}
		name := k.verb + " " + k.resource
		if k.subresource != "" {
			name += "/" + k.subresource
		}
		if k.code != "200" && k.code != "201" {
			name += " (" + k.code + ")"
		}
		agg[name] += v
	}
	rows := make([]row, 0, len(agg))
	for k, v := range agg {
		rows = append(rows, row{k, v})
	}
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].n != rows[j].n {
			return rows[i].n > rows[j].n
		}
		return rows[i].name < rows[j].name
	})
	parts := make([]string, 0, len(rows))
	for _, r := range rows {
		parts = append(parts, fmt.Sprintf("%s=%.0f", r.name, r.n))
	}
	if len(parts) == 0 {
		return noneCounted
	}
	return strings.Join(parts, ", ")
}
