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
	"io"
	"net/http"
	"strings"
	"time"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// What a finished PaymentJob costs etcd is read from etcd itself, through
// its JSON gateway (POST /v3/kv/range, served on the client URL by default),
// so that the benchmark needs no etcd client module. The API server stores a
// custom resource as JSON, managedFields included, under
// <etcd-prefix>/<group>/<resource>/<namespace>/<name>; etcd keeps the key
// and that value (older revisions until the API server compacts them, which
// are not counted).

// etcdPrefix is the API server's --etcd-prefix, which the benchmark sets.
const etcdPrefix = "/registry"

// etcdPageSize is how many keys one range request returns.
const etcdPageSize = 500

// etcdJobsPrefix is the etcd key prefix of the PaymentJobs of ns.
func etcdJobsPrefix(ns string) string {
	return fmt.Sprintf("%s/%s/paymentjobs/%s/", etcdPrefix, paymentsv1alpha1.GroupVersion.Group, ns)
}

// etcdLedgerPrefix is the etcd key prefix of the PaymentLedger pages, which
// are cluster-scoped.
func etcdLedgerPrefix() string {
	return fmt.Sprintf("%s/%s/paymentledgers/", etcdPrefix, paymentsv1alpha1.GroupVersion.Group)
}

// etcdKV is one key and its value, as the gateway returns them (JSON
// decodes the base64 into bytes).
type etcdKV struct {
	Key   []byte `json:"key"`
	Value []byte `json:"value"`
}

// etcdRangeRequest is the gateway's RangeRequest; bytes are sent as base64.
type etcdRangeRequest struct {
	Key      []byte `json:"key"`
	RangeEnd []byte `json:"range_end"`
	Limit    int64  `json:"limit,omitempty"`
}

// etcdRangeResponse is the part of the gateway's RangeResponse the
// benchmark reads.
type etcdRangeResponse struct {
	KVs  []etcdKV `json:"kvs"`
	More bool     `json:"more"`
}

// prefixEnd is the range end that covers every key starting with prefix.
func prefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	// Only 0xff bytes: to the end of the keyspace.
	return []byte{0}
}

// storedSize adds up what etcd stores for some objects.
type storedSize struct {
	// objects counted, and their keys' and values' bytes.
	objects int64
	bytes   int64
}

// perObject is the average bytes of an object, or NaN for none.
func (s storedSize) perObject() float64 {
	if s.objects == 0 {
		return notMeasured
	}
	return float64(s.bytes) / float64(s.objects)
}

// add counts kv.
func (s *storedSize) add(kv etcdKV) error {
	s.objects++
	s.bytes += int64(len(kv.Key) + len(kv.Value))
	return nil
}

// addFinishedJob counts kv if its value is a PaymentJob with the finished
// label, the operator's last write.
func (s *storedSize) addFinishedJob(kv etcdKV) error {
	var obj struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(kv.Value, &obj); err != nil {
		return fmt.Errorf("etcd key %s does not hold JSON (is the storage encoded otherwise?): %w", kv.Key, err)
	}
	if obj.Kind != "PaymentJob" || obj.Metadata.Labels[paymentsv1alpha1.LabelFinished] != "true" {
		return nil
	}
	return s.add(kv)
}

// etcdClient reads etcd's keys through its JSON gateway.
type etcdClient struct {
	// endpoint is etcd's client URL, http://127.0.0.1:<port>.
	endpoint string
	http     *http.Client
}

// rangePrefix calls each for every key under prefix, in key order, a page
// at a time.
func (e *etcdClient) rangePrefix(ctx context.Context, prefix string, each func(etcdKV) error) error {
	start, end := []byte(prefix), prefixEnd([]byte(prefix))
	for {
		resp, err := e.rangeOnce(ctx, etcdRangeRequest{Key: start, RangeEnd: end, Limit: etcdPageSize})
		if err != nil {
			return err
		}
		for _, kv := range resp.KVs {
			if err := each(kv); err != nil {
				return err
			}
		}
		if !resp.More || len(resp.KVs) == 0 {
			return nil
		}
		// The next page starts right after the last key.
		start = append(bytes.Clone(resp.KVs[len(resp.KVs)-1].Key), 0)
	}
}

func (e *etcdClient) rangeOnce(ctx context.Context, r etcdRangeRequest) (etcdRangeResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	body, err := json.Marshal(r)
	if err != nil {
		return etcdRangeResponse{}, err
	}
	url := strings.TrimSuffix(e.endpoint, "/") + "/v3/kv/range"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return etcdRangeResponse{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.http.Do(req)
	if err != nil {
		return etcdRangeResponse{}, fmt.Errorf("cannot read etcd: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return etcdRangeResponse{}, fmt.Errorf("cannot read etcd: POST %s: %s: %s", url, resp.Status, msg)
	}
	var out etcdRangeResponse
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return etcdRangeResponse{}, fmt.Errorf("cannot decode etcd's range response: %w", err)
	}
	return out, nil
}

// storedFinishedJobs returns what etcd stores for the finished PaymentJobs
// of ns.
func (e *etcdClient) storedFinishedJobs(ctx context.Context, ns string) (storedSize, error) {
	var s storedSize
	err := e.rangePrefix(ctx, etcdJobsPrefix(ns), s.addFinishedJob)
	return s, err
}

// storedLedgerPages returns what etcd stores for the outcome ledger's
// pages: every key under etcdLedgerPrefix and its value.
func (e *etcdClient) storedLedgerPages(ctx context.Context) (storedSize, error) {
	var s storedSize
	err := e.rangePrefix(ctx, etcdLedgerPrefix(), s.add)
	return s, err
}
