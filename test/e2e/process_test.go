//go:build e2e

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

package e2e

import (
	"io"
	"strings"

	"github.com/idempotency-dev/paymentjob-operator/internal/testing/childproc"
)

// process is a child process of the suite (see childproc), with the log
// checks of the scenarios.
type process struct {
	*childproc.Process
}

// startProcess starts a child (see childproc.Start) and registers it, so
// that the suite stops any that a test left running.
func startProcess(name, bin, logPath string, env []string, stdout io.Writer, args ...string) (*process, error) {
	cp, err := childproc.Start(name, bin, logPath, env, stdout, args...)
	if err != nil {
		return nil, err
	}
	p := &process{Process: cp}
	register(p)
	return p, nil
}

// logContainsFold reports whether the process's log holds s, ignoring case.
func (p *process) logContainsFold(s string) bool {
	return strings.Contains(strings.ToLower(p.ReadLog()), strings.ToLower(s))
}
