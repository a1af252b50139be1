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
)

// SearchPaymentIntents returns copies of the intents whose metadata holds
// every pair of metadata, newest first and, at the same second, by
// descending ID, as Stripe's search orders them. Unlike Stripe's search,
// which lags behind writes, it sees every committed intent at once.
func (e *Engine) SearchPaymentIntents(metadata map[string]string) []Intent {
	e.mu.Lock()
	var found []Intent
	for _, in := range e.intents {
		if hasMetadata(in, metadata) {
			found = append(found, in.clone())
		}
	}
	e.mu.Unlock()

	slices.SortFunc(found, func(a, b Intent) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return strings.Compare(b.ID, a.ID)
	})
	return found
}

// hasMetadata reports whether the intent's metadata holds every pair.
func hasMetadata(in Intent, metadata map[string]string) bool {
	for k, v := range metadata {
		if got, ok := in.Metadata[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// searchClause is one metadata['key']:'value' clause of a search query.
type searchClause struct {
	key, value string
}

// metadataOf returns the metadata every clause asks for, and false when two
// clauses ask for different values of the same key, which nothing matches.
func metadataOf(clauses []searchClause) (map[string]string, bool) {
	metadata := make(map[string]string, len(clauses))
	for _, c := range clauses {
		if v, ok := metadata[c.key]; ok && v != c.value {
			return nil, false
		}
		metadata[c.key] = c.value
	}
	return metadata, true
}

// errUnsupportedQuery explains the subset of Stripe's search query language
// that the sandbox understands.
var errUnsupportedQuery = errors.New("the sandbox supports only metadata['key']:'value' clauses " +
	"(single or double quotes, backslash escapes) joined by AND")

// parseSearchQuery parses a query of Stripe's search language made of
// metadata equality clauses joined by AND, such as
// metadata['order']:'42' AND metadata["tenant"]:"acme".
func parseSearchQuery(query string) ([]searchClause, error) {
	p := queryParser{s: query}
	var clauses []searchClause
	p.spaces()
	for {
		c, err := p.clause()
		if err != nil {
			return nil, err
		}
		clauses = append(clauses, c)
		n := p.spaces()
		if p.done() {
			return clauses, nil
		}
		if n == 0 || !p.keyword("AND") || p.spaces() == 0 {
			return nil, p.errorf("expected AND")
		}
	}
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
