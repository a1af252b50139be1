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

package pgserver

import (
	"errors"
	"fmt"
	"testing"
)

// Program is the testing.TB that Start asks for, for a program that is not
// a test (hack/localenv, the local environment of make run-local): Fatalf
// ends the call that Do runs with an error, Errorf (the cleanups report
// with it) is kept for Close, and Cleanup's functions run at Close, last
// first. The server's methods call nothing else; any other method panics
// on the nil TB, and Do returns that panic as an error.
type Program struct {
	testing.TB
	cleanups []func()
	errs     []error
}

// programFatal is the panic of Program.Fatalf.
type programFatal struct{ err error }

// Helper does nothing: there is no test log to attribute lines in.
func (p *Program) Helper() {}

// Fatalf ends the call of Do with the error.
func (p *Program) Fatalf(format string, args ...any) {
	panic(programFatal{err: fmt.Errorf(format, args...)})
}

// Errorf keeps the error for Close.
func (p *Program) Errorf(format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf(format, args...))
}

// Cleanup registers f for Close.
func (p *Program) Cleanup(f func()) { p.cleanups = append(p.cleanups, f) }

// Do calls f, which uses p, and returns what it failed with:
//
//	p := &pgserver.Program{}
//	var srv *pgserver.Server
//	err := p.Do(func() { srv = pgserver.Start(p) })
//	defer p.Close() // stops the server, removes its folder
func (p *Program) Do(f func()) (err error) {
	defer func() {
		switch r := recover().(type) {
		case nil:
		case programFatal:
			err = r.err
		default:
			err = fmt.Errorf("pgserver panicked (a testing.TB method Program lacks?): %v", r)
		}
	}()
	f()
	return nil
}

// Close runs the registered cleanups, last first (the server is stopped
// and its folder removed), and returns the errors reported.
func (p *Program) Close() error {
	for i := len(p.cleanups) - 1; i >= 0; i-- {
		if err := p.Do(p.cleanups[i]); err != nil {
			p.errs = append(p.errs, err)
		}
	}
	p.cleanups = nil
	return errors.Join(p.errs...)
}
