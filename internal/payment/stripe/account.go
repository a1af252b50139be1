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

package stripe

import (
	"context"
	"errors"
	"fmt"

	"github.com/idempotency-dev/paymentjob-operator/internal/payment"
)

// Account returns the id (acct_...) of the Stripe account that the API key
// belongs to, read with GET /v1/account. Every error is a
// payment.TransientError, a refusal of the request included, and never
// contains the API key.
func (p *Provider) Account(ctx context.Context) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", payment.Transient(fmt.Errorf("cannot read the Stripe account: %w", err), 0)
	}
	account, err := p.client.V1Accounts.Retrieve(ctx, nil)
	if err != nil {
		return "", p.uncertain("cannot read the Stripe account", err)
	}
	if account.ID == "" {
		return "", payment.Transient(errors.New("cannot read the Stripe account: Stripe's answer has no id"), 0)
	}
	return account.ID, nil
}
