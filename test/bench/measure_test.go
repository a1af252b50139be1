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
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// apiserverMetrics is an excerpt of kube-apiserver's /metrics.
const apiserverMetrics = `# HELP apiserver_request_total [STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.
# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="payments.idempotency.dev",resource="paymentjobs",scope="resource",subresource="",verb="POST",version="v1alpha1"} 100
apiserver_request_total{code="200",component="apiserver",dry_run="",group="payments.idempotency.dev",resource="paymentjobs",scope="resource",subresource="",verb="PATCH",version="v1alpha1"} 200
apiserver_request_total{code="200",component="apiserver",dry_run="",group="payments.idempotency.dev",resource="paymentjobs",scope="resource",subresource="status",verb="PUT",version="v1alpha1"} 199
apiserver_request_total{code="409",component="apiserver",dry_run="",group="payments.idempotency.dev",resource="paymentjobs",scope="resource",subresource="status",verb="PUT",version="v1alpha1"} 3
apiserver_request_total{code="201",component="apiserver",dry_run="",group="events.k8s.io",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 100
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="secrets",scope="resource",subresource="",verb="GET",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="payments.idempotency.dev",resource="paymentjobs",scope="namespace",subresource="",verb="LIST",version="v1alpha1"} 1
apiserver_request_total{code="0",component="apiserver",dry_run="",group="payments.idempotency.dev",resource="paymentjobs",scope="namespace",subresource="",verb="WATCH",version="v1alpha1"} 4
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="",scope="",subresource="/readyz",verb="GET",version=""} 7
apiserver_request_total{code="201",component="apiserver",dry_run="",group="payments.idempotency.dev",resource="paymentledgers",scope="cluster",subresource="",verb="POST",version="v1alpha1"} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="payments.idempotency.dev",resource="paymentledgers",scope="resource",subresource="",verb="PUT",version="v1alpha1"} 20
apiserver_request_total{code="409",component="apiserver",dry_run="",group="payments.idempotency.dev",resource="paymentledgers",scope="resource",subresource="",verb="PUT",version="v1alpha1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="payments.idempotency.dev",resource="paymentledgers",scope="resource",subresource="",verb="DELETE",version="v1alpha1"} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="payments.idempotency.dev",resource="paymentledgers",scope="cluster",subresource="",verb="LIST",version="v1alpha1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="payments.idempotency.dev",resource="paymentledgers",scope="resource",subresource="",verb="GET",version="v1alpha1"} 2
apiserver_request_total{code="0",component="apiserver",dry_run="",group="payments.idempotency.dev",resource="paymentledgers",scope="cluster",subresource="",verb="WATCH",version="v1alpha1"} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 1
apiserver_request_total{code="201",component="apiserver",dry_run="",group="payments.idempotency.dev",resource="paymentrefunds",scope="resource",subresource="",verb="POST",version="v1alpha1"} 10
apiserver_request_total{code="200",component="apiserver",dry_run="",group="payments.idempotency.dev",resource="paymentrefunds",scope="resource",subresource="",verb="PATCH",version="v1alpha1"} 20
apiserver_request_total{code="200",component="apiserver",dry_run="",group="payments.idempotency.dev",resource="paymentrefunds",scope="resource",subresource="status",verb="PUT",version="v1alpha1"} 20
apiserver_request_total_other{verb="GET",resource="secrets"} 1000
apiserver_request_duration_seconds_bucket{verb="GET",le="0.005"} 3
`

func TestParseRequestCounts(t *testing.T) {
	g := NewWithT(t)
	c, err := parseRequestCounts(strings.NewReader(apiserverMetrics))
	g.Expect(err).NotTo(HaveOccurred())
	f := c.figures()
	g.Expect(f.jobWrites).To(Equal(502.0), "POST, PATCH and PUT on paymentjobs and its status, 409s included")
	g.Expect(f.refundWrites).To(Equal(50.0), "POST, PATCH and PUT on paymentrefunds and its status")
	g.Expect(f.eventPosts).To(Equal(100.0))
	g.Expect(f.ledgerWrites).To(Equal(24.0), "POST, PUT and DELETE on paymentledgers, 409s included")
	g.Expect(f.ledgerReads).To(Equal(5.0), "LIST and GET of paymentledgers; WATCH is not a read")
	g.Expect(f.reads).To(Equal(8.0), "GET secrets, LIST paymentjobs, LIST and GET paymentledgers; /readyz is not a resource, WATCH is not a read")
	g.Expect(f.conflicts).To(Equal(5.0))
	g.Expect(f.writes).To(Equal(677.0), "every mutating request on a resource, leases, ledger pages and refunds included")
	g.Expect(c.filter(operatorWrite).breakdown()).To(Equal(
		"PATCH paymentjobs=200, PUT paymentjobs/status=199, PATCH paymentrefunds=20, PUT paymentledgers=20, PUT paymentrefunds/status=20, "+
			"PUT paymentjobs/status (409)=3, PUT paymentledgers (409)=2, DELETE paymentledgers=1, POST paymentledgers=1"),
		"the creates of jobs and refunds are the benchmark's")

	// The window's delta: 10 more finalizer patches and one more conflict.
	later := strings.Replace(apiserverMetrics, `verb="PATCH",version="v1alpha1"} 200`, `verb="PATCH",version="v1alpha1"} 210`, 1)
	later = strings.Replace(later, `verb="PUT",version="v1alpha1"} 3`, `verb="PUT",version="v1alpha1"} 4`, 1)
	c2, err := parseRequestCounts(strings.NewReader(later))
	g.Expect(err).NotTo(HaveOccurred())
	d := c2.minus(c)
	g.Expect(d.figures()).To(Equal(requestFigures{jobWrites: 11, conflicts: 1, writes: 11}))
	g.Expect(d.breakdown()).To(Equal("PATCH paymentjobs=10, PUT paymentjobs/status (409)=1"))
	g.Expect(requestCounts{}.breakdown()).To(Equal("none"))
}

func TestParseRequestCountsWithoutTheMetric(t *testing.T) {
	g := NewWithT(t)
	_, err := parseRequestCounts(strings.NewReader("# nothing here\nup 1\n"))
	g.Expect(err).To(MatchError(ContainSubstring("no apiserver_request_total")))
}

func TestParseSample(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		labels  map[string]string
		value   float64
		wantErr string
	}{
		{name: "no labels", in: " 42", labels: map[string]string{}, value: 42},
		{name: "timestamp", in: `{a="b"} 1.5e3 1700000000000`, labels: map[string]string{"a": "b"}, value: 1500},
		{name: "escapes", in: `{path="a\"b\\c\nd",x="y",} 1`, labels: map[string]string{"path": "a\"b\\c\nd", "x": "y"}, value: 1},
		{name: "comma and brace in a value", in: `{le="+Inf",q="a,b}"} +Inf`, labels: map[string]string{"le": "+Inf", "q": "a,b}"}, value: posInf()},
		{name: "unterminated value", in: `{a="b`, wantErr: "unterminated value"},
		{name: "unterminated labels", in: `{a="b",`, wantErr: "unterminated labels"},
		{name: "label without a value", in: `{a="b" 1`, wantErr: "label without a value"},
		{name: "unquoted value", in: `{a=b} 1`, wantErr: "not quoted"},
		{name: "no value", in: `{a="b"}`, wantErr: "no value"},
		{name: "bad value", in: `{a="b"} x`, wantErr: "invalid value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s, err := parseSample(tt.in)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(s.labels).To(Equal(tt.labels))
			g.Expect(s.value).To(Equal(tt.value))
		})
	}
}

func posInf() float64 {
	var zero float64
	return 1 / zero
}

func TestSumSamples(t *testing.T) {
	g := NewWithT(t)
	text := `# TYPE workqueue_depth gauge
workqueue_depth{controller="paymentjob",name="paymentjob"} 3
workqueue_depth{controller="paymentprovider",name="paymentprovider"} 5
controller_runtime_reconcile_total{controller="paymentjob",result="success"} 10
controller_runtime_reconcile_total{controller="paymentjob",result="requeue_after"} 2
controller_runtime_reconcile_total{controller="paymentprovider",result="success"} 7
`
	depth, err := parseSamples(strings.NewReader(text), "workqueue_depth")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sumSamples(depth, map[string]string{"controller": "paymentjob"})).To(Equal(3.0))
	total, err := parseSamples(strings.NewReader(text), "controller_runtime_reconcile_total")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(sumSamples(total, map[string]string{"controller": "paymentjob"})).To(Equal(12.0))
	g.Expect(sumSamples(total, nil)).To(Equal(19.0))
}

func TestParseHeapAlloc(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    uint64
		wantErr string
	}{
		{name: "heap profile with MemStats", in: `heap profile: 12: 34567 [890: 123456] @ heap/1048576
1: 8192 [1: 8192] @ 0x43a1b5 0x46e3c1
#	0x43a1b4	runtime.malg+0x34	/usr/local/go/src/runtime/proc.go:4321

# runtime.MemStats
# Alloc = 9876543
# TotalAlloc = 123456789
# Sys = 23456789
# HeapAlloc = 9876543
# HeapSys = 15990784
# HeapInuse = 11329536
# NumGC = 12
`, want: 9876543},
		{name: "no MemStats", in: "heap profile: 1: 2 [3: 4] @ heap/1048576\n", wantErr: "no HeapAlloc"},
		{name: "not a number", in: "# HeapAlloc = lots\n", wantErr: "invalid HeapAlloc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			v, err := parseHeapAlloc(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(v).To(Equal(tt.want))
		})
	}
}

func TestParseVMRSS(t *testing.T) {
	g := NewWithT(t)
	v, err := parseVMRSS(strings.NewReader("Name:\tmanager\nVmPeak:\t 1300000 kB\nVmRSS:\t   54321 kB\nThreads:\t12\n"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(v).To(Equal(uint64(54321 * 1024)))
	_, err = parseVMRSS(strings.NewReader("Name:\tmanager\n"))
	g.Expect(err).To(MatchError(ContainSubstring("no VmRSS")))
	_, err = parseVMRSS(strings.NewReader("VmRSS:\t12 MB\n"))
	g.Expect(err).To(MatchError(ContainSubstring("unexpected VmRSS")))
}

func TestPercentile(t *testing.T) {
	hundred := make([]time.Duration, 100)
	for i := range hundred {
		hundred[i] = time.Duration(i+1) * time.Millisecond
	}
	tests := []struct {
		name   string
		values []time.Duration
		p      float64
		want   time.Duration
	}{
		{name: "no values", values: nil, p: 50, want: 0},
		{name: "one value", values: []time.Duration{7}, p: 99, want: 7},
		{name: "p50 of 1..100", values: hundred, p: 50, want: 50 * time.Millisecond},
		{name: "p99 of 1..100", values: hundred, p: 99, want: 99 * time.Millisecond},
		{name: "p100 of 1..100", values: hundred, p: 100, want: 100 * time.Millisecond},
		{name: "p50 of two", values: []time.Duration{1, 2}, p: 50, want: 1},
		{name: "p99 of three", values: []time.Duration{1, 2, 3}, p: 99, want: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(percentile(tt.values, tt.p)).To(Equal(tt.want))
		})
	}
}

func TestParseAudit(t *testing.T) {
	g := NewWithT(t)
	log := `{"kind":"Event","level":"Metadata","stage":"ResponseComplete","verb":"get","user":{"username":"bench-history-manager","groups":["system:masters"]},"objectRef":{"resource":"secrets","namespace":"a","name":"s","apiVersion":"v1"},"responseStatus":{"code":200}}
{"kind":"Event","level":"Metadata","stage":"ResponseStarted","verb":"watch","user":{"username":"bench-history-manager"},"objectRef":{"resource":"paymentjobs"}}
{"kind":"Event","level":"Metadata","stage":"ResponseComplete","verb":"patch","user":{"username":"bench-history-manager"},"objectRef":{"resource":"paymentjobs","subresource":""}}
{"kind":"Event","level":"Metadata","stage":"ResponseComplete","verb":"update","user":{"username":"bench-history-manager"},"objectRef":{"resource":"paymentjobs","subresource":"status"}}
{"kind":"Event","level":"Metadata","stage":"ResponseComplete","verb":"list","user":{"username":"bench-history-manager"},"objectRef":{"resource":"paymentjobs"}}
{"kind":"Event","level":"Metadata","stage":"ResponseComplete","verb":"get","user":{"username":"bench-history-manager"}}
{"kind":"Event","level":"Metadata","stage":"ResponseComplete","verb":"update","user":{"username":"system:apiserver"},"objectRef":{"resource":"leases"}}

`
	c, err := parseAudit(strings.NewReader(log), "bench-history-manager")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.writes).To(Equal(2))
	g.Expect(c.reads).To(Equal(3))
	g.Expect(c.String()).To(Equal("get=1, get secrets=1, list paymentjobs=1, patch paymentjobs=1, update paymentjobs/status=1"))

	_, err = parseAudit(strings.NewReader("not json\n"), "x")
	g.Expect(err).To(MatchError(ContainSubstring("invalid audit event")))
	empty, err := parseAudit(strings.NewReader(""), "x")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(empty.String()).To(Equal("none"))
}

func TestCountProviderRequests(t *testing.T) {
	g := NewWithT(t)
	log := `time=2026-01-01T00:00:00Z level=INFO msg="Serving sandbox" addr=127.0.0.1:1
time=2026-01-01T00:00:01Z level=INFO msg="Served request" method=POST path=/v1/payment_intents status=200 replayed=false duration=1ms
time=2026-01-01T00:00:02Z level=INFO msg="Served request" method=GET path=/_sandbox/stats status=200 replayed=false duration=1ms
time=2026-01-01T00:00:03Z level=INFO msg="Served request" method=GET path=/v1/payment_intents/search status=200 replayed=false duration=1ms`
	g.Expect(countProviderRequests([]byte(log))).To(Equal(2))
	g.Expect(countProviderRequests(nil)).To(Equal(0))
}

func TestProviderRoutes(t *testing.T) {
	g := NewWithT(t)
	log := `time=2026-01-01T00:00:00Z level=INFO msg="Serving sandbox" addr=127.0.0.1:1
time=2026-01-01T00:00:01Z level=INFO msg="Served request" method=GET path=/v1/payment_intents/pi_3Abc status=200 replayed=false duration=1ms
time=2026-01-01T00:00:01Z level=INFO msg="Served request" method=GET path=/v1/payment_intents/pi_9Xyz status=200 replayed=false duration=1ms
time=2026-01-01T00:00:01Z level=INFO msg="Served request" method=GET path=/v1/refunds status=200 replayed=false duration=1ms
time=2026-01-01T00:00:01Z level=INFO msg="Served request" method=POST path=/v1/refunds status=200 replayed=true duration=1ms
time=2026-01-01T00:00:02Z level=INFO msg="Served request" method=GET path=/_sandbox/stats status=200 replayed=false duration=1ms
time=2026-01-01T00:00:03Z level=INFO msg="Served request" method=GET path=/v1/payment_intents/search status=200 replayed=false duration=1ms
time=2026-01-01T00:00:03Z level=INFO msg="Served request" method=POST path=/v1/payment_intents/pi_3Abc/cancel status=200 replayed=false duration=1ms`
	routes := providerRoutes([]byte(log))
	g.Expect(routes).To(Equal(map[string]float64{
		"GET /v1/payment_intents/{id}":         2,
		"GET /v1/refunds":                      1,
		"POST /v1/refunds":                     1,
		"GET /v1/payment_intents/search":       1,
		"POST /v1/payment_intents/{id}/cancel": 1,
	}))
	g.Expect(float64(countProviderRequests([]byte(log)))).To(Equal(6.0), "the same requests as countProviderRequests counts")
	g.Expect(routesString(routes)).To(Equal("GET /v1/payment_intents/{id}=2, GET /v1/payment_intents/search=1, GET /v1/refunds=1, " +
		"POST /v1/payment_intents/{id}/cancel=1, POST /v1/refunds=1"))
	g.Expect(routesString(nil)).To(Equal("none"))
	g.Expect(runResult{routes: routes}.providerRequests()).To(Equal(int64(6)))
}

func TestParseProcStat(t *testing.T) {
	g := NewWithT(t)
	st, err := parseProcStat("4242 (kube-apiserver) S 4000 4242 4000 0 -1 4194560 123 0 0 0 1500 250 0 0 20 0 12 0 100 0 0\n")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st).To(Equal(procStat{comm: "kube-apiserver", ppid: 4000, cpu: 17.5}))

	st, err = parseProcStat("5000 (postgres) S 4000 5000 5000 0 -1 4194560 123 0 0 0 10 5 300 100 20 0 1 0 100 0 0")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st).To(Equal(procStat{comm: "postgres", ppid: 4000, cpu: 0.15, waitedCPU: 4}), "the backends it has waited for")

	st, err = parseProcStat("7 (a (b) c) R 1 7 1 0 -1 0 0 0 0 0 3 4 0 0 20 0 1 0 1 0 0")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(st.comm).To(Equal("a (b) c"))
	g.Expect(st.ppid).To(Equal(1))
	g.Expect(st.cpu).To(BeNumerically("~", 0.07, 1e-9))

	_, err = parseProcStat("7 (x) R 1")
	g.Expect(err).To(MatchError(ContainSubstring("short")))
	_, err = parseProcStat("7 (x) R 1 7 1 0 -1 0 0 0 0 0 3 4 0")
	g.Expect(err).To(MatchError(ContainSubstring("short")), "no children times")
	_, err = parseProcStat("garbage")
	g.Expect(err).To(HaveOccurred())
}

func TestAttributeCPU(t *testing.T) {
	g := NewWithT(t)
	const self = 100
	procs := map[int]procStat{
		1:    {comm: "systemd", ppid: 0, cpu: 50},
		90:   {comm: "go", ppid: 1, cpu: 20, waitedCPU: 7},
		self: {comm: "bench", ppid: 90, cpu: 2, waitedCPU: 30},
		101:  {comm: "kube-apiserver", ppid: self, cpu: 10},
		102:  {comm: "manager", ppid: self, cpu: 3},
		// The postmaster, two live backends (one with a child), and the
		// backends it has waited for (waitedCPU).
		103: {comm: "postgres", ppid: self, cpu: 0.5, waitedCPU: 1},
		104: {comm: "postgres", ppid: 103, cpu: 2},
		105: {comm: "postgres", ppid: 103, cpu: 0.25},
		106: {comm: "sh", ppid: 105, cpu: 0.25},
		// Somebody else's process.
		200: {comm: "postgres", ppid: 1, cpu: 99},
	}
	g.Expect(attributeCPU(self, procs)).To(Equal(cpuUsage{
		"bench": 2, "kube-apiserver": 10, "manager": 3, "postgres": 4,
	}), "the benchmark's children, with their descendants; not the benchmark's children times, nor its parents")

	loop := map[int]procStat{7: {comm: "a", ppid: 8}, 8: {comm: "b", ppid: 7}}
	g.Expect(attributeCPU(self, loop)).To(BeEmpty(), "a cycle (pids reused while /proc was read) ends")
}

func TestCPUUsage(t *testing.T) {
	g := NewWithT(t)
	before := cpuUsage{"etcd": 1, "kube-apiserver": 10}
	after := cpuUsage{"etcd": 3, "kube-apiserver": 30, "manager": 1}
	d := after.minus(before)
	g.Expect(d).To(Equal(cpuUsage{"etcd": 2, "kube-apiserver": 20, "manager": 1}))
	g.Expect(d.perJob(1000)).To(Equal("kube-apiserver 20.00 ms, etcd 2.00 ms, manager 1.00 ms"))
}
