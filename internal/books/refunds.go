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

package books

import (
	"cmp"
	"fmt"
)

// foreign adds the finding of a refund of ours whose provider object o
// gave money back from a charge made under another key than the refunded
// payment's, when the comparison knows that charge's key.
func (c *comparison) foreign(r Record, o Object) {
	charge := cmp.Or(o.Charge, r.Charge)
	key, known := c.chargeKeys[charge]
	if charge == "" || r.ChargeKey == "" || !known || key == r.ChargeKey {
		return
	}
	under := "no key of ours"
	if key != "" {
		under = "the key " + key
	}
	c.add(r, RefundOfForeignCharge, []Object{o}, fmt.Sprintf("%s gave money back from %s, which the provider holds under %s, not under %s, the refunded payment's",
		o.ID, charge, under, r.ChargeKey))
}
