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
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	paymentsv1alpha1 "github.com/idempotency-dev/paymentjob-operator/api/v1alpha1"
)

// Root is what every command shares: the kubectl flags (cli-runtime's
// ConfigFlags: --kubeconfig, --context, -n, ...), the streams, and the
// client made from them on first use.
type Root struct {
	flags   *genericclioptions.ConfigFlags
	streams genericiooptions.IOStreams
	// Version is printed by `kubectl payments version`.
	version string

	client client.Client
	config *rest.Config
}

// NewCommand returns `kubectl payments` with its commands. version is what
// `kubectl payments version` prints.
func NewCommand(streams genericiooptions.IOStreams, version string) *cobra.Command {
	r := &Root{flags: genericclioptions.NewConfigFlags(true), streams: streams, version: version}
	cmd := &cobra.Command{
		Use:   "kubectl-payments",
		Short: "Answer the questions of people who run payments with the paymentjob-operator",
		Long: `kubectl payments reads and acts on PaymentJobs, PaymentRefunds, the outcome ledger
and reconciliations, as the paymentjob-operator records them.

Exit codes: 0 done; 1 error (the API server did not answer, a timeout, ...);
2 usage (a wrong command, argument or flag, --context too); 3 object not found;
4 forbidden by RBAC; 5 the operator's CRDs are not installed; 6 the outcome
ledger cannot be read; 7 the books do not balance (reconcile found
discrepancies); 8 a report's sha256 does not match; 9 the object is not in a
state the command applies to (nothing was changed).`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.ArbitraryArgs,
		RunE:          helpOrUnknown,
		// kubectl runs plugins as kubectl-payments; show "kubectl payments".
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl payments"},
	}
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	r.flags.AddFlags(cmd.PersistentFlags())
	cmd.AddCommand(
		newStatusCommand(r),
		newResolveCommand(r),
		newApproveCommand(r),
		newRefundCommand(r),
		newLedgerCommand(r),
		newReconcileCommand(r),
		newReportCommand(r),
		newVersionCommand(r),
	)
	cmd.SetFlagErrorFunc(flagError)
	return cmd
}

// Client returns the client of the kubeconfig the flags name, with the
// operator's API types and core/v1.
func (r *Root) Client() (client.Client, error) {
	if r.client != nil {
		return r.client, nil
	}
	cfg, err := r.flags.ToRESTConfig()
	if err != nil {
		return nil, r.kubeconfigError(err)
	}
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := paymentsv1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, classify(err, "the API server")
	}
	r.client, r.config = c, cfg
	return c, nil
}

// ClientIn returns the client and the namespace of -n (or of the
// kubeconfig's context).
func (r *Root) ClientIn() (client.Client, string, error) {
	c, err := r.Client()
	if err != nil {
		return nil, "", err
	}
	ns, err := r.Namespace()
	return c, ns, err
}

// Namespace is the namespace of -n, or of the kubeconfig's context.
func (r *Root) Namespace() (string, error) {
	ns, _, err := r.flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		if cerr := r.contextError(); cerr != nil {
			return "", cerr
		}
		return "", &Error{Code: ExitError, Err: fmt.Errorf("cannot read the namespace from the kubeconfig: %w", err)}
	}
	return ns, nil
}

// kubeconfigError is err of reading the kubeconfig, saying what to do
// when the context is not in it.
func (r *Root) kubeconfigError(err error) error {
	if cerr := r.contextError(); cerr != nil {
		return cerr
	}
	return &Error{Code: ExitError, Err: fmt.Errorf("cannot read the kubeconfig: %w", err)}
}

// contextError says that the context the command uses is not in the
// kubeconfig, and which files were read; nil when it is, or when the
// kubeconfig cannot be read at all. A --context of another kubeconfig is
// a usage error, as kubectl's other flags; a current-context that names
// no context is the kubeconfig's error (exit 1).
func (r *Root) contextError() error {
	loader := r.flags.ToRawKubeConfigLoader()
	raw, err := loader.RawConfig()
	if err != nil {
		return nil
	}
	files := "no kubeconfig file found"
	if read := kubeconfigFiles(loader.ConfigAccess().GetLoadingPrecedence()); len(read) > 0 {
		files = strings.Join(read, ", ")
	}
	const list = "kubectl config get-contexts lists its contexts"
	if name := ptr.Deref(r.flags.Context, ""); name != "" {
		if _, ok := raw.Contexts[name]; ok {
			return nil
		}
		return usageError("context %q (--context) is not in the kubeconfig (%s): %s", name, files, list)
	}
	if name := raw.CurrentContext; name != "" {
		if _, ok := raw.Contexts[name]; !ok {
			return &Error{Code: ExitError, Err: fmt.Errorf("the kubeconfig's current-context %q is not in it (%s): %s, "+
				"kubectl config use-context picks one, or give --context", name, files, list)}
		}
	}
	return nil
}

// kubeconfigFiles are those of paths that exist: the files a kubeconfig
// is read from (--kubeconfig, else KUBECONFIG's, else ~/.kube/config).
func kubeconfigFiles(paths []string) []string {
	var read []string
	for _, p := range paths {
		if _, err := os.Stat(p); err == nil {
			read = append(read, p)
		}
	}
	return read
}

// flagError makes an error of the command line a usage error (exit 2):
// one a flag's value gives (minorUnits) is said as it is, without
// pflag's "invalid argument" wrapping.
func flagError(_ *cobra.Command, err error) error {
	if e, ok := errors.AsType[*Error](err); ok {
		return e
	}
	return usageError("%v", err)
}

// Out is where results go.
func (r *Root) Out() io.Writer { return r.streams.Out }

// ErrOut is where progress, warnings and errors go.
func (r *Root) ErrOut() io.Writer { return r.streams.ErrOut }

func newVersionCommand(r *Root) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(r.Out(), r.version)
			return err
		},
	}
}

// ctxOf is the command's context (cobra sets it from ExecuteContext).
func ctxOf(cmd *cobra.Command) context.Context {
	if ctx := cmd.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// usageArgs makes the errors of an argument check usage errors (exit 2).
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageError("%v", err)
		}
		return nil
	}
}

// helpOrUnknown runs a command of commands: without a command, its help;
// an unknown command is a usage error (exit 2), where cobra would exit 1
// or print the help and exit 0.
func helpOrUnknown(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2
	}
	if suggestions := cmd.SuggestionsFor(args[0]); len(suggestions) > 0 {
		return usageError("unknown command %q for %q; did you mean %s?", args[0], cmd.CommandPath(), strings.Join(suggestions, " or "))
	}
	return usageError("unknown command %q for %q; run %s --help", args[0], cmd.CommandPath(), cmd.CommandPath())
}
