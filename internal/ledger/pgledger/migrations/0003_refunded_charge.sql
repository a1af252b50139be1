-- For a refund's row, the provider's id of the charge the refund gives
-- money back from, so that reconciliation can match a refund to the charge
-- it refunds once the refund's object is gone. A charge's row, and a row
-- recorded before this migration, keep ''.
ALTER TABLE paymentjob_outcomes
    ADD COLUMN refunded_charge text NOT NULL DEFAULT '';
