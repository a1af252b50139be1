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

package egress_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment/egress"
)

// metadataResolver resolves every name to the cloud's metadata address.
type metadataResolver struct{}

func (metadataResolver) LookupIPAddr(context.Context, string) ([]net.IPAddr, error) {
	return []net.IPAddr{{IP: net.IPv4(169, 254, 169, 254)}}, nil
}

// The manager reads --insecure-provider-hosts once; each PaymentProvider's
// URLs are checked when it is read, and every connection is judged again
// on the address it is made to.
func Example() {
	hosts, err := egress.ParseHosts("127.0.0.1, Sandbox.Payments.Test")
	if err != nil {
		fmt.Println(err)
		return
	}
	policy := &egress.Policy{
		InsecureHosts: hosts,
		Resolver:      metadataResolver{},
		// Control runs only for an address the policy allowed; this
		// example connects to nothing.
		Control: func(_, address string, _ syscall.RawConn) error {
			return fmt.Errorf("this example connects to nothing, not even %s", address)
		},
	}

	fmt.Println(policy.CheckURL("spec.stripe.apiBase", "https://api.stripe.com"))
	fmt.Println(policy.CheckURL("spec.http.url", "http://sandbox.payments.test:8080/charges"))
	fmt.Println(policy.CheckURL("spec.http.url", "http://payments.example/charges"))
	fmt.Println(policy.CheckURL("spec.http.lookupURL", "https://169.254.169.254/latest/meta-data/"))

	// The name passed CheckURL, but it resolves to the metadata address:
	// the connection is refused before anything is sent.
	_, err = policy.DialContext(context.Background(), "tcp", "payments.example:443")
	var refused *egress.RefusedError
	fmt.Println(errors.As(err, &refused), err)

	_, err = egress.ParseHosts("127.0.0.1:8080")
	fmt.Println(err)
	// Output:
	// <nil>
	// <nil>
	// spec.http.url: plain http to "payments.example" is refused: use https, or list host "payments.example" in the manager's --insecure-provider-hosts
	// spec.http.lookupURL: egress to "169.254.169.254" refused: 169.254.169.254 is a link-local address
	// true egress to "payments.example" refused: 169.254.169.254 is a link-local address
	// invalid --insecure-provider-hosts entry "127.0.0.1:8080": it has a port; list the host name only, every port of a listed host may be reached
}
