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

package sandbox

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// MaxSearchClauses is the most clauses one search query may hold, as at
// Stripe.
const MaxSearchClauses = 10

// WithSearchLag sets the search lag; see SetSearchLag.
func WithSearchLag(d time.Duration) Option {
	return func(e *Engine) { e.searchLag = max(d, 0) }
}

// SetSearchLag makes search lag behind writes like Stripe's: an intent is
// visible to search only once d has passed, by the Engine's clock, since it
// was created (Intent.Created). A status changed later is seen at once by
// search, as by GetPaymentIntent. Zero, the default, or a negative d shows
// every intent at once.
func (e *Engine) SetSearchLag(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.searchLag = max(d, 0)
}

// SearchLag returns the search lag in force.
func (e *Engine) SearchLag() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.searchLag
}

// SetLookupEnabled turns search, and with it the HTTP contract's lookup, on
// (the default) or off. Off, the Engine behaves like a provider without a
// lookup: every search is refused with a 404, as a route that does not
// exist, and finds nothing. Creates, retrieves and the saved keys are not
// affected, so a caller that needs a lookup to avoid charging again has no
// way to learn of an earlier charge.
func (e *Engine) SetLookupEnabled(on bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.lookupOff = !on
}

// LookupEnabled reports whether search and lookups are answered.
func (e *Engine) LookupEnabled() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return !e.lookupOff
}

// refuseLookup returns the 404 of a search or lookup request while lookups
// are off, and counts it in Stats.Searches; while they are on it returns nil
// and counts nothing. The HTTP routes call it before they read their
// parameters, so that every request is refused as by a route that does not
// exist.
func (e *Engine) refuseLookup() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.lookupOff {
		return nil
	}
	e.stats.Searches++
	return lookupOffError()
}

// SearchPaymentIntents returns copies of the intents that match a query of
// Stripe's search language: metadata['key']:'value' clauses, at most
// MaxSearchClauses, joined either by AND or by OR. They come newest first
// and, at the same instant, by descending ID, as Stripe's search orders
// them. Like Stripe's search it lags behind writes (SetSearchLag) and has its
// own rate limit (RateLimits.Searches); every call counts in Stats.Searches.
// Errors are *StripeError: 404 while lookups are off (SetLookupEnabled), 400
// for a query outside the subset, 429 beyond the rate limit.
func (e *Engine) SearchPaymentIntents(query string) ([]Intent, error) {
	e.lockSettled()
	e.stats.Searches++
	if e.lookupOff {
		e.mu.Unlock()
		return nil, lookupOffError()
	}
	if !e.allow(e.searches) {
		e.mu.Unlock()
		return nil, rateLimitError(RateLimitRetryAfter, false)
	}
	q, err := parseSearchQuery(query)
	if err != nil {
		e.mu.Unlock()
		return nil, invalidRequest(CodeParameterInvalid, "query", "Invalid query: "+err.Error())
	}
	now := e.now()
	var found []Intent
	for _, in := range e.intents {
		if (e.searchLag == 0 || !now.Before(in.Created.Add(e.searchLag))) && q.matches(in) {
			found = append(found, in.clone())
		}
	}
	e.mu.Unlock()
	sortNewestFirst(found)
	return found, nil
}

// SearchKeys returns the intents whose metadata entry
// payment.MetadataKeyIdempotencyKey (paymentjob_idempotency_key) is one of keys, with one search of at
// most MaxSearchClauses clauses joined by OR.
func (e *Engine) SearchKeys(keys []string) ([]Intent, error) {
	clauses := make([]string, len(keys))
	for i, key := range keys {
		clauses[i] = metadataClause(payment.MetadataKeyIdempotencyKey, key)
	}
	return e.SearchPaymentIntents(strings.Join(clauses, " OR "))
}

// metadataClause is the clause metadata['key']:'value', with backslashes
// and quotes escaped.
func metadataClause(key, value string) string {
	escape := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace
	return fmt.Sprintf("metadata['%s']:'%s'", escape(key), escape(value))
}

// sortNewestFirst orders intents as Stripe's search does: newest first and,
// at the same instant, by descending ID.
func sortNewestFirst(intents []Intent) {
	slices.SortFunc(intents, func(a, b Intent) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
}

// searchClause is one metadata['key']:'value' clause of a search query.
type searchClause struct {
	key, value string
}

// searchQuery is a parsed search query.
type searchQuery struct {
	clauses []searchClause
	// or is true when the clauses are joined by OR, false for AND.
	or bool
}

// matches reports whether the intent's metadata satisfies the query.
func (q searchQuery) matches(in Intent) bool {
	for _, c := range q.clauses {
		got, ok := in.Metadata[c.key]
		if hit := ok && got == c.value; hit == q.or {
			return hit
		}
	}
	return !q.or
}

// errUnsupportedQuery explains the subset of Stripe's search query language
// that the sandbox understands.
var errUnsupportedQuery = errors.New("the sandbox supports only metadata['key']:'value' clauses " +
	"(single or double quotes, backslash escapes) joined either by AND or by OR")

// parseSearchQuery parses a query of Stripe's search language made of
// metadata equality clauses joined by AND, such as
// metadata['order']:'42' AND metadata["tenant"]:"acme", or joined by OR.
// Like Stripe, it refuses a query that mixes AND and OR, or that holds more
// than MaxSearchClauses clauses.
func parseSearchQuery(query string) (searchQuery, error) {
	p := queryParser{s: query}
	var q searchQuery
	connector := ""
	p.spaces()
	for {
		c, err := p.clause()
		if err != nil {
			return searchQuery{}, err
		}
		q.clauses = append(q.clauses, c)
		n := p.spaces()
		if p.done() {
			break
		}
		at := p.i
		var word string
		switch {
		case n > 0 && p.keyword("AND"):
			word = "AND"
		case n > 0 && p.keyword("OR"):
			word = "OR"
		default:
			return searchQuery{}, p.errorf("expected AND or OR")
		}
		if p.spaces() == 0 {
			return searchQuery{}, p.errorf("expected a space after %s", word)
		}
		if connector != "" && word != connector {
			p.i = at
			return searchQuery{}, p.errorf("AND and OR cannot be mixed in one query")
		}
		connector = word
	}
	if len(q.clauses) > MaxSearchClauses {
		return searchQuery{}, fmt.Errorf("the query has %d clauses; at most %d are allowed", len(q.clauses), MaxSearchClauses)
	}
	q.or = connector == "OR"
	return q, nil
}

// queryParser reads a search query from left to right.
type queryParser struct {
	s string
	i int
}

func (p *queryParser) done() bool { return p.i == len(p.s) }

// spaces skips spaces and returns how many there were.
func (p *queryParser) spaces() int {
	start := p.i
	for !p.done() && p.s[p.i] == ' ' {
		p.i++
	}
	return p.i - start
}

// keyword consumes word, in any case, and reports whether it was there.
func (p *queryParser) keyword(word string) bool {
	if len(p.s)-p.i < len(word) || !strings.EqualFold(p.s[p.i:p.i+len(word)], word) {
		return false
	}
	p.i += len(word)
	return true
}

// literal consumes lit and reports whether it was there.
func (p *queryParser) literal(lit string) bool {
	if !strings.HasPrefix(p.s[p.i:], lit) {
		return false
	}
	p.i += len(lit)
	return true
}

// clause reads metadata['key']:'value'.
func (p *queryParser) clause() (searchClause, error) {
	if !p.literal("metadata[") {
		return searchClause{}, p.errorf("expected metadata[")
	}
	key, err := p.quoted()
	if err != nil {
		return searchClause{}, err
	}
	if key == "" {
		return searchClause{}, p.errorf("empty metadata key")
	}
	if !p.literal("]:") {
		return searchClause{}, p.errorf("expected ]:")
	}
	value, err := p.quoted()
	if err != nil {
		return searchClause{}, err
	}
	return searchClause{key: key, value: value}, nil
}

// quoted reads a string in single or double quotes, in which a backslash
// escapes the next character.
func (p *queryParser) quoted() (string, error) {
	if p.done() || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", p.errorf("expected a quoted string")
	}
	quote := p.s[p.i]
	p.i++
	var b strings.Builder
	for !p.done() {
		c := p.s[p.i]
		p.i++
		switch {
		case c == quote:
			return b.String(), nil
		case c == '\\' && !p.done():
			b.WriteByte(p.s[p.i])
			p.i++
		default:
			b.WriteByte(c)
		}
	}
	return "", p.errorf("unterminated string")
}

// errorf returns an error naming the position, with the supported syntax.
func (p *queryParser) errorf(format string, args ...any) error {
	return fmt.Errorf("unsupported query at character %d: %s: %w", p.i, fmt.Sprintf(format, args...), errUnsupportedQuery)
}
