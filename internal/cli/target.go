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
	"strings"

	"github.com/spf13/cobra"
)

// kind is a kind of the operator's API a command accepts as TYPE/NAME.
type kind string

const (
	kindJob    kind = "PaymentJob"
	kindRefund kind = "PaymentRefund"
)

// kindNames are the names kubectl accepts for each kind: the short name,
// the singular, the plural, and the plural with the group.
var kindNames = map[string]kind{
	"pj": kindJob, "paymentjob": kindJob, "paymentjobs": kindJob, "paymentjobs." + paymentsGroup: kindJob,
	"prefund": kindRefund, "paymentrefund": kindRefund, "paymentrefunds": kindRefund, "paymentrefunds." + paymentsGroup: kindRefund,
}

// target is the object a command is about.
type target struct {
	Kind kind
	Name string
}

func (t target) String() string {
	if t.Kind == kindRefund {
		return "prefund/" + t.Name
	}
	return "pj/" + t.Name
}

// parseTarget reads TYPE/NAME, TYPE NAME or NAME (a PaymentJob) as kubectl
// does; allowed are the kinds the command takes.
func parseTarget(args []string, allowed ...kind) (target, error) {
	var typ, name string
	switch {
	case len(args) == 1 && strings.Contains(args[0], "/"):
		typ, name, _ = strings.Cut(args[0], "/")
	case len(args) == 1:
		typ, name = "pj", args[0]
	case len(args) == 2:
		typ, name = args[0], args[1]
	default:
		return target{}, usageError("name one object: pj/NAME%s", refundHint(allowed))
	}
	k, ok := kindNames[strings.ToLower(typ)]
	if !ok || name == "" || strings.Contains(name, "/") {
		return target{}, usageError("%q is not an object this command takes: name it pj/NAME%s", strings.Join(args, " "), refundHint(allowed))
	}
	for _, a := range allowed {
		if a == k {
			return target{Kind: k, Name: name}, nil
		}
	}
	return target{}, usageError("this command does not take a %s; name a pj/NAME", k)
}

func refundHint(allowed []kind) string {
	for _, a := range allowed {
		if a == kindRefund {
			return " or prefund/NAME"
		}
	}
	return ""
}

// Every command is an options struct and a new*Command that builds its
// cobra.Command, cobra's idiom (kubectl's own commands read the same), so
// `duplicates` pairs their openings (the options' last fields, the
// constructor's first lines, Use and Short) on purpose: what the commands
// share beyond that is written once, here (targetCommand), in bookFlags
// (status.go), getPayment and newPayment (resolve.go) and completeFirst.

// targetCommand is cmd acting on one object of kinds, named as parseTarget
// reads it: its arguments complete to the kinds' objects, and it runs run
// with the object once the arguments are read.
func targetCommand(r *Root, cmd *cobra.Command, kinds []kind, run func(cmd *cobra.Command, t target) error) *cobra.Command {
	cmd.ValidArgsFunction = completeObjects(r, kinds...)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		t, err := parseTarget(args, kinds...)
		if err != nil {
			return err
		}
		return run(cmd, t)
	}
	return cmd
}
