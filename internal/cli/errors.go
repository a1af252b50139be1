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

package cli

import (
	"context"
	"errors"
	"fmt"
	"net"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
)

// The exit codes of kubectl payments (docs/kubectl-payments.md, "Exit codes").
const (
	// ExitOK: the command did what it says.
	ExitOK = 0
	// ExitError: it could not (the API server did not answer, a timeout, a
	// file that cannot be written, ...).
	ExitError = 1
	// ExitUsage: the command line is wrong.
	ExitUsage = 2
	// ExitNotFound: the object named does not exist.
	ExitNotFound = 3
	// ExitForbidden: RBAC denied a request.
	ExitForbidden = 4
	// ExitNotInstalled: the operator's CRDs are not in the cluster.
	ExitNotInstalled = 5
	// ExitLedgerUnavailable: the outcome ledger could not be read.
	ExitLedgerUnavailable = 6
	// ExitDiscrepancies: a reconciliation found the books do not balance.
	ExitDiscrepancies = 7
	// ExitReportMismatch: a report's sha256 is not the one in the status.
	ExitReportMismatch = 8
	// ExitNotApplicable: the object is not in a state the command applies
	// to; nothing was changed.
	ExitNotApplicable = 9
)

// Error is an error with the exit code it ends the command with.
type Error struct {
	Code int
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// ExitCode is the exit code err ends the command with: the Code of an
// *Error in its chain, ExitError otherwise, ExitOK for nil.
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Code
	}
	return ExitError
}

func usageError(format string, args ...any) error {
	return &Error{Code: ExitUsage, Err: fmt.Errorf(format, args...)}
}

func notApplicable(format string, args ...any) error {
	return &Error{Code: ExitNotApplicable, Err: fmt.Errorf(format, args...)}
}

// classify turns an error of a request about what into one that names it,
// says what to do and carries its exit code.
func classify(err error, what string) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*Error](err); ok {
		return err
	}
	switch {
	case meta.IsNoMatchError(err) || isMissingGroup(err):
		return &Error{Code: ExitNotInstalled, Err: fmt.Errorf(
			"cannot read %s: the paymentjob-operator is not installed in this cluster (no %s API): "+
				"install its CRDs (kubectl apply -f dist/install.yaml, or the Helm chart), or check --context",
			what, paymentsGroup)}
	case apierrors.IsNotFound(err):
		return &Error{Code: ExitNotFound, Err: fmt.Errorf("%s not found: check the name and the namespace (-n)", what)}
	case apierrors.IsForbidden(err):
		msg := statusMessage(err)
		return &Error{Code: ExitForbidden, Err: fmt.Errorf(
			"forbidden to read or change %s (%s); %s (kubectl auth can-i shows what you may do)", what, msg, askFor(msg))}
	case apierrors.IsUnauthorized(err):
		return &Error{Code: ExitForbidden, Err: fmt.Errorf("the API server does not know who you are (%s): log in again or check --kubeconfig", what)}
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: ExitError, Err: fmt.Errorf("timed out on %s: %w", what, err)}
	case isConnection(err):
		return &Error{Code: ExitError, Err: fmt.Errorf("cannot reach the API server for %s: %w; check --kubeconfig and --context", what, err)}
	}
	return &Error{Code: ExitError, Err: fmt.Errorf("%s: %w", what, err)}
}

// classifyClusterScoped is classify for an object of a cluster-scoped
// kind: a missing one is not looked for in another namespace (-n), but in
// the list kubectl get resource prints.
func classifyClusterScoped(err error, what, resource string) error {
	if apierrors.IsNotFound(err) && !isMissingGroup(err) {
		return &Error{Code: ExitNotFound, Err: fmt.Errorf("%s not found: kubectl get %s lists them", what, resource)}
	}
	return classify(err, what)
}

const paymentsGroup = "payments.idempotency.dev"

// isMissingGroup tells a 404 for a whole resource (the CRD is absent) from
// a 404 for an object: the API server's answer then has no details naming
// the object.
func isMissingGroup(err error) bool {
	if !apierrors.IsNotFound(err) {
		return false
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d == nil || d.Name == ""
}

func statusMessage(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return status.Status().Message
	}
	return err.Error()
}

func isConnection(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &op) || errors.As(err, &dns)
}
