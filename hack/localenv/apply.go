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
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// Applying config/samples, and saying what each object became.

// applyAttempts bounds how often the samples are applied while the API
// server answers 503.
const applyAttempts = 30

// applySamples applies config/samples. The API server's admission policies
// learn a new CRD's kind a moment after the CRD is served; until then they
// answer 503 ("There can be a delay between when CustomResourceDefinitions
// are created and when they are available"), and the samples are applied
// again, which is harmless. What it prints is what happened across the
// attempts (appliedObjects): an object created by the first attempt is
// "created", not the "unchanged" of the next.
func (e *localEnv) applySamples(ctx context.Context) error {
	step("kubectl apply -k config/samples")
	var outputs []string
	for attempt := 1; ; attempt++ {
		out, err := e.kubectl("apply", "-k", filepath.Join(e.root, "config", "samples"))
		outputs = append(outputs, out)
		if err == nil {
			break
		}
		if attempt == applyAttempts || !strings.Contains(out, "ServiceUnavailable") {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	fmt.Print(indent(appliedObjects(outputs)))
	return nil
}

// appliedLine is a line of kubectl apply's output about one object.
var appliedLine = regexp.MustCompile(`^(\S+) (created|configured|unchanged)$`)

// appliedObjects merges the outputs of the attempts of one kubectl apply,
// the last of which succeeded: each object with what the first attempt
// that changed it did (an object appears once per namespace, under the
// same kind/name: they are counted), the last attempt's other lines
// (warnings), and a note of the attempts the API server refused.
func appliedObjects(outputs []string) string {
	var lines []string
	changed := map[string]int{}
	for i, out := range outputs {
		last := i == len(outputs)-1
		// seen counts the lines of this attempt about each object that an
		// earlier attempt changed.
		seen := map[string]int{}
		for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			m := appliedLine.FindStringSubmatch(strings.TrimSpace(line))
			switch {
			case m == nil:
				if last && strings.TrimSpace(line) != "" {
					lines = append(lines, line)
				}
				continue
			case m[2] == "unchanged" && seen[m[1]] < changed[m[1]]:
				// Changed by an earlier attempt: already reported.
				seen[m[1]]++
				continue
			case m[2] != "unchanged":
				changed[m[1]]++
			}
			lines = append(lines, m[0])
		}
	}
	if n := len(outputs) - 1; n > 0 {
		lines = append(lines, fmt.Sprintf("(applied %d times: the API server answered 503 to the first %d while its "+
			"admission policies learnt the new CRDs' kinds; an object is shown once, with what the first attempt that "+
			"changed it did)", n+1, n))
	}
	return strings.Join(lines, "\n") + "\n"
}
