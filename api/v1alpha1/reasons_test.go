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

package v1alpha1_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"regexp"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// conditionReason is the API server's pattern for metav1.Condition.Reason.
var conditionReason = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)

// reasonConstants reads every Reason... constant of reasons.go, so that a
// reason added there is checked without being listed here.
func reasonConstants(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "reasons.go", nil, 0)
	if err != nil {
		t.Fatalf("cannot parse reasons.go: %v", err)
	}
	reasons := map[string]string{}
	for _, decl := range f.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					t.Fatalf("%s is not a string literal: the values are API, write them out", name.Name)
				}
				value, err := strconv.Unquote(lit.Value)
				if err != nil {
					t.Fatalf("%s: %v", name.Name, err)
				}
				reasons[name.Name] = value
			}
		}
	}
	return reasons
}

func TestReasonsAreValidConditionReasons(t *testing.T) {
	reasons := reasonConstants(t)
	g := NewWithT(t)
	g.Expect(len(reasons)).To(BeNumerically(">=", 40), "reasons.go was read")

	byValue := map[string]string{}
	for name, value := range reasons {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(name).To(HavePrefix("Reason"))
			g.Expect(value).To(MatchRegexp(conditionReason.String()))
			g.Expect(len(value)).To(BeNumerically("<=", 64), "a reason is a short code")
			// What the API server checks on a condition: pattern and length.
			errs := metav1validation.ValidateCondition(metav1.Condition{
				Type: paymentsv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: value,
				LastTransitionTime: metav1.Now(),
			}, field.NewPath("status", "conditions").Index(0))
			g.Expect(errs).To(BeEmpty())
		})
		if other, ok := byValue[value]; ok {
			t.Errorf("%s and %s are both %q: a reason must say one thing", name, other, value)
		}
		byValue[value] = name
	}
}

func TestReasonsAreTheDocumentedValues(t *testing.T) {
	g := NewWithT(t)
	// A few values users already match on, compiled in: the constants are
	// the same strings as before they existed.
	g.Expect(paymentsv1alpha1.ReasonCardDeclined).To(Equal("CardDeclined"))
	g.Expect(paymentsv1alpha1.ReasonIdempotencyKeyReused).To(Equal("IdempotencyKeyReused"))
	g.Expect(paymentsv1alpha1.ReasonFoundInLedger).To(Equal("FoundInLedger"))
	g.Expect(paymentsv1alpha1.ReasonAuthenticationRequired).To(Equal("authentication_required"))
	g.Expect(paymentsv1alpha1.ReasonRefundFailedAfterSuccess).To(Equal("RefundFailedAfterSuccess"))

	reasons := reasonConstants(t)
	for name, value := range reasons {
		if name == "ReasonAuthenticationRequired" {
			continue // Stripe's code, kept as Stripe spells it
		}
		g.Expect(name).To(Equal("Reason"+value), "a constant is named after its value")
		g.Expect(strings.ToUpper(value[:1])).To(Equal(value[:1]), "%s is CamelCase", name)
	}
}
