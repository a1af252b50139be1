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
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"

	. "github.com/onsi/gomega"
)

func TestPrefixEnd(t *testing.T) {
	g := NewWithT(t)
	g.Expect(prefixEnd([]byte("/registry/a/"))).To(Equal([]byte("/registry/a0")))
	g.Expect(prefixEnd([]byte{'a', 0xff})).To(Equal([]byte{'b'}))
	g.Expect(prefixEnd([]byte{0xff})).To(Equal([]byte{0}))
	g.Expect(etcdJobsPrefix("ns")).To(Equal("/registry/payments.idempotency.dev/paymentjobs/ns/"))
}

func TestStoredSizeCountsFinishedJobsOnly(t *testing.T) {
	g := NewWithT(t)
	var s storedSize
	g.Expect(s.perObject()).To(Satisfy(math.IsNaN), "no job: not measured")
	finished := []byte(`{"kind":"PaymentJob","metadata":{"name":"a","labels":{"payments.idempotency.dev/finished":"true"}}}`)
	running := []byte(`{"kind":"PaymentJob","metadata":{"name":"b"}}`)
	g.Expect(s.addFinishedJob(etcdKV{Key: []byte("/k/a"), Value: finished})).To(Succeed())
	g.Expect(s.addFinishedJob(etcdKV{Key: []byte("/k/b"), Value: running})).To(Succeed())
	g.Expect(s).To(Equal(storedSize{objects: 1, bytes: int64(4 + len(finished))}))
	g.Expect(s.addFinishedJob(etcdKV{Key: []byte("/k/c"), Value: []byte("k8s\x00proto")})).To(MatchError(ContainSubstring("does not hold JSON")))
}

// fakeEtcd serves /v3/kv/range over keys, limit keys a response, as
// etcd's JSON gateway does.
func fakeEtcd(t *testing.T, keys map[string]string) *httptest.Server {
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v3/kv/range" {
			http.NotFound(w, r)
			return
		}
		var req etcdRangeRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var resp etcdRangeResponse
		for _, k := range sorted {
			if bytes.Compare([]byte(k), req.Key) < 0 || bytes.Compare([]byte(k), req.RangeEnd) >= 0 {
				continue
			}
			if req.Limit > 0 && int64(len(resp.KVs)) == req.Limit {
				resp.More = true
				break
			}
			resp.KVs = append(resp.KVs, etcdKV{Key: []byte(k), Value: []byte(keys[k])})
		}
		if err := json.NewEncoder(w).Encode(resp); err != nil {
			t.Error(err)
		}
	}))
}

func TestStoredFinishedJobsReadsEveryPage(t *testing.T) {
	g := NewWithT(t)
	keys := map[string]string{}
	want := storedSize{}
	for i := range 1234 {
		k := etcdJobsPrefix("bench") + jobName(i)
		v := fmt.Sprintf(`{"kind":"PaymentJob","metadata":{"name":%q,"labels":{"payments.idempotency.dev/finished":"true"}},"pad":%q}`, jobName(i), bytes.Repeat([]byte("x"), i%7))
		keys[k] = v
		want.objects++
		want.bytes += int64(len(k) + len(v))
	}
	// Other namespaces and resources are not counted.
	keys[etcdJobsPrefix("bench-2")+"job-000000"] = `{"kind":"PaymentJob","metadata":{"labels":{"payments.idempotency.dev/finished":"true"}}}`
	keys["/registry/payments.idempotency.dev/paymentledgers/page-00000001"] = `{"kind":"PaymentLedger"}`
	srv := fakeEtcd(t, keys)
	defer srv.Close()

	e := &etcdClient{endpoint: srv.URL, http: srv.Client()}
	got, err := e.storedFinishedJobs(context.Background(), "bench")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(want))
}

func TestStoredLedgerPagesCountsEveryPageAndNothingElse(t *testing.T) {
	g := NewWithT(t)
	g.Expect(etcdLedgerPrefix()).To(Equal("/registry/payments.idempotency.dev/paymentledgers/"))
	page1, page2 := `{"kind":"PaymentLedger","entries":[]}`, `{"kind":"PaymentLedger","entries":[{"key":"a/b"}]}`
	keys := map[string]string{
		etcdLedgerPrefix() + "page-00000001":                      page1,
		etcdLedgerPrefix() + "page-00000002":                      page2,
		etcdJobsPrefix("bench") + "job-000000":                    `{"kind":"PaymentJob"}`,
		"/registry/payments.idempotency.dev/paymentledgersx/page": `{}`,
	}
	srv := fakeEtcd(t, keys)
	defer srv.Close()

	e := &etcdClient{endpoint: srv.URL, http: srv.Client()}
	got, err := e.storedLedgerPages(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(storedSize{objects: 2, bytes: int64(2*len(etcdLedgerPrefix()+"page-00000001") + len(page1) + len(page2))}))

	delete(keys, etcdLedgerPrefix()+"page-00000001")
	delete(keys, etcdLedgerPrefix()+"page-00000002")
	empty := fakeEtcd(t, keys)
	defer empty.Close()
	e = &etcdClient{endpoint: empty.URL, http: empty.Client()}
	got, err = e.storedLedgerPages(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(storedSize{}), "no page: 0 bytes")
}
