-- The money each payment moves, so that reconciliation can compare a
-- payment whose job is gone with the provider's books to the minor unit.
-- Rows recorded before this migration keep 0 and '': unknown, never a
-- mismatch.
ALTER TABLE paymentjob_outcomes
    ADD COLUMN amount   bigint NOT NULL DEFAULT 0 CHECK (amount >= 0),
    ADD COLUMN currency text   NOT NULL DEFAULT '';
