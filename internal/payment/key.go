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

package payment

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// MaxKeyLength is the longest idempotency key sent to a provider (Stripe's
// limit). Longer keys are sent hashed.
const MaxKeyLength = 255

// hashedKeyPrefix marks a sent key whose job key was replaced by its hash.
const hashedKeyPrefix = "sha256:"

// EffectiveKey is the job's idempotency key: spec.idempotencyKey, or the
// job's name when it is empty.
func EffectiveKey(name, specKey string) string {
	if specKey != "" {
		return specKey
	}
	return name
}

// SentKey is the key sent to the provider: "<namespace>/<key>", so that
// tenants sharing one provider account never collide. When that is longer
// than MaxKeyLength, the key part is replaced by "sha256:<hex>" of the whole
// scoped key; the namespace stays readable. A key that itself starts with
// "sha256:" is always hashed, so a verbatim key can never equal the hashed
// form of another one.
func SentKey(namespace, key string) string {
	scoped := namespace + "/" + key
	if len(scoped) <= MaxKeyLength && !strings.HasPrefix(key, hashedKeyPrefix) {
		return scoped
	}
	sum := sha256.Sum256([]byte(scoped))
	hashed := namespace + "/" + hashedKeyPrefix + hex.EncodeToString(sum[:])
	if len(hashed) <= MaxKeyLength {
		return hashed
	}
	// Namespaces are at most 63 characters in Kubernetes, so this is only
	// reached by callers outside it; keep the bound anyway.
	return hashedKeyPrefix + hex.EncodeToString(sum[:])
}

// ScopedKey is SentKey under a PaymentProvider's key scope:
// "<scope>:<namespace>/<key>", hashed like SentKey when too long. An empty
// scope gives SentKey's key, so providers without a scope keep the keys
// they always sent. Scopes and namespaces never contain ':' or '/', so no
// scoped key equals another scope's or an unscoped one.
func ScopedKey(scope, namespace, key string) string {
	if scope == "" {
		return SentKey(namespace, key)
	}
	return SentKey(scope+":"+namespace, key)
}

// refundSuffix ends the namespace part of a refund's key (RefundKey).
const refundSuffix = ".refund"

// KeyNamespace is the namespace a sent key (SentKey, ScopedKey, RefundKey)
// belongs to: the key is "[<scope>:]<namespace>[.refund]/<key>", hashed or
// not. It is "" for a key the operator did not send, or one hashed whole
// (longer than MaxKeyLength even with its key part hashed, which a
// Kubernetes namespace never makes).
func KeyNamespace(key string) string {
	ns, _, ok := strings.Cut(key, "/")
	if !ok {
		return ""
	}
	if _, after, scoped := strings.Cut(ns, ":"); scoped {
		ns = after
	}
	return strings.TrimSuffix(ns, refundSuffix)
}

// IsRefundKey reports whether a sent key is a PaymentRefund's (RefundKey)
// rather than a PaymentJob's.
func IsRefundKey(key string) bool {
	ns, _, ok := strings.Cut(key, "/")
	return ok && strings.HasSuffix(ns, refundSuffix)
}

// RequestHash is the fingerprint of a request sent under a key:
// "sha256:<hex>" of a canonical JSON encoding (struct fields in a fixed
// order, map keys sorted). It is recorded in the job's status when the job is
// claimed; a later attempt whose request hashes differently would be refused
// by the provider as a reused key, so the reconciler checks it first.
func RequestHash(key string, req ChargeRequest) string {
	payload := struct {
		Version string        `json:"v"`
		Key     string        `json:"key"`
		Request ChargeRequest `json:"request"`
	}{Version: "1", Key: key, Request: req}
	// json.Marshal cannot fail for strings, integers and string maps.
	b, _ := json.Marshal(payload)
	sum := sha256.Sum256(b)
	return hashedKeyPrefix + hex.EncodeToString(sum[:])
}
