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

func TestProgressLine(t *testing.T) {
	tests := []struct {
		name            string
		done, total     int
		elapsed         time.Duration
		want            string
		wantFull, want0 int
	}{
		{name: "start", done: 0, total: 5000, elapsed: 0, want: "[p] 0/5000 ", wantFull: 0, want0: progressWidth},
		{name: "half way", done: 2500, total: 5000, elapsed: 5 * time.Second, want: " 500 jobs/s", wantFull: progressWidth / 2, want0: progressWidth / 2},
		{name: "done", done: 10, total: 10, elapsed: time.Second, want: "[p] 10/10 ", wantFull: progressWidth, want0: 0},
		{name: "no total", done: 3, total: 0, elapsed: time.Second, want: "3/0", wantFull: 0, want0: progressWidth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			line := progressLine("p", tt.done, tt.total, tt.elapsed)
			g.Expect(line).To(ContainSubstring(tt.want))
			g.Expect(strings.Count(line, "█")).To(Equal(tt.wantFull))
			g.Expect(strings.Count(line, "░")).To(Equal(tt.want0))
		})
	}
}
