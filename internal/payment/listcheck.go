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
	"errors"
	"fmt"
)

// maxCursorLength bounds ListRequest.After: a provider's cursor is an id or
// a short token, and it is sent in a URL.
const maxCursorLength = 1024

// CheckListRequest refuses, before anything is sent, a list request that no
// adapter can send: a kind other than KindCharges, KindRefunds and
// KindDisputes; a window without a start, starting before 1970, or whose
// end, to the second, is not after its start; a cursor that is not 1 to
// 1024 visible ASCII characters.
func CheckListRequest(req ListRequest) error {
	switch req.Kind {
	case KindCharges, KindRefunds, KindDisputes:
	default:
		return fmt.Errorf("cannot list %q: a list is of charges, refunds or disputes", req.Kind)
	}
	switch {
	case req.From.IsZero() || req.From.Unix() < 0:
		return fmt.Errorf("cannot list %s: the window has no start", req.Kind)
	case req.To.Unix() <= req.From.Unix():
		return fmt.Errorf("cannot list %s: the window does not end after it starts, to the second", req.Kind)
	case len(req.After) > maxCursorLength || !VisibleASCII(req.After):
		return errors.New("cannot list with a cursor that is not 1 to 1024 visible ASCII characters")
	}
	return nil
}
