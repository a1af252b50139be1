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

package providerlookup

import (
	"errors"
	"fmt"
	"testing"

	. "github.com/onsi/gomega"
)

func TestRedact(t *testing.T) {
	const credential = "sk_test_0123456789"
	tests := []struct {
		name       string
		err        error
		credential string
		want       string
	}{
		{name: "nil", err: nil, credential: credential},
		{name: "echoed", err: fmt.Errorf("wrapped: %w: key %s", ErrUnsupported, credential), credential: credential,
			want: "wrapped: " + ErrUnsupported.Error() + ": key [REDACTED]"},
		{name: "absent", err: fmt.Errorf("wrapped: %w", ErrUnsupported), credential: credential,
			want: "wrapped: " + ErrUnsupported.Error()},
		{name: "too short to cut", err: fmt.Errorf("the key: %w", ErrUnsupported), credential: "key",
			want: "the key: " + ErrUnsupported.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := redact(tt.err, tt.credential)
			if tt.err == nil {
				g.Expect(got).NotTo(HaveOccurred())
				return
			}
			g.Expect(got.Error()).To(Equal(tt.want))
			g.Expect(errors.Is(got, ErrUnsupported)).To(BeTrue())
		})
	}
}
