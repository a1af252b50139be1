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

package engine

import "context"

// statusPass is what a pass changed on its object's status and has not
// written yet.
type statusPass struct {
	// dirty: the status in memory differs from the one last written.
	dirty bool
	// then are the events, counts and logs of the changes, once written.
	then []func()
}

type statusPassKey struct{}

// withStatusPass starts a pass's status in ctx.
func withStatusPass(ctx context.Context) context.Context {
	return context.WithValue(ctx, statusPassKey{}, &statusPass{})
}

func statusPassOf(ctx context.Context) *statusPass {
	p, _ := ctx.Value(statusPassKey{}).(*statusPass)
	return p
}
