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
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// progressWidth is the number of cells of the bar.
const progressWidth = 24

// Refresh intervals of the progress line: at most 5 a second on a
// terminal, a plain line every few seconds otherwise.
const (
	ttyRefresh   = 200 * time.Millisecond
	plainRefresh = 5 * time.Second
)

// progress shows how many of a phase's jobs are done on stderr. It redraws
// from a ticker, so the work it counts only increments an atomic counter.
type progress struct {
	name  string
	total int
	out   io.Writer
	tty   bool
	start time.Time
	done  atomic.Int64

	stopOnce sync.Once
	stopped  chan struct{}
	exited   chan struct{}
}

// isTerminal reports whether f is a character device (a terminal).
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// startProgress starts drawing the progress of a phase of total jobs.
func startProgress(name string, total int) *progress {
	p := &progress{
		name: name, total: total, out: os.Stderr, tty: isTerminal(os.Stderr), start: time.Now(),
		stopped: make(chan struct{}), exited: make(chan struct{}),
	}
	go p.loop()
	return p
}

// add counts n more jobs done.
func (p *progress) add(n int) { p.done.Add(int64(n)) }

// set sets the number of jobs done.
func (p *progress) set(n int) { p.done.Store(int64(n)) }

func (p *progress) loop() {
	defer close(p.exited)
	every := plainRefresh
	if p.tty {
		every = ttyRefresh
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-p.stopped:
			return
		case <-tick.C:
			p.draw(false)
		}
	}
}

func (p *progress) draw(final bool) {
	line := progressLine(p.name, int(p.done.Load()), p.total, time.Since(p.start))
	switch {
	case p.tty && final:
		fmt.Fprintf(p.out, "\r\033[K%s\n", line)
	case p.tty:
		fmt.Fprintf(p.out, "\r\033[K%s", line)
	default:
		fmt.Fprintln(p.out, line)
	}
}

// stop draws the last state and ends the line.
func (p *progress) stop() {
	p.stopOnce.Do(func() {
		close(p.stopped)
		<-p.exited
		p.draw(true)
	})
}

// progressLine renders "[name] done/total ███░░░ 410 jobs/s".
func progressLine(name string, done, total int, elapsed time.Duration) string {
	filled := 0
	if total > 0 {
		filled = min(progressWidth, done*progressWidth/total)
	}
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(done) / s
	}
	return fmt.Sprintf("[%s] %d/%d %s%s %.0f jobs/s", name, done, total,
		strings.Repeat("█", filled), strings.Repeat("░", progressWidth-filled), rate)
}
