-- The outcome ledger: one row per idempotency key, the first outcome recorded
-- under it. Several clusters may share the table; cluster says which one
-- recorded a row and does not scope its key.
CREATE TABLE paymentjob_outcomes (
    -- COLLATE "C": keys compare as bytes, and the primary key's order does
    -- not change under the index when the operating system's locale data does.
    key                text COLLATE "C" PRIMARY KEY,
    fingerprint        text        NOT NULL,
    -- The fields of ProviderIdentity, one column each: reconciliation reads
    -- the ledger by account and date.
    provider_uid       text        NOT NULL,
    provider_endpoint  text        NOT NULL,
    provider_account   text        NOT NULL,
    provider_mode      text        NOT NULL,
    provider_key_scope text        NOT NULL,
    charge             text        NOT NULL,
    outcome            text        NOT NULL CHECK (outcome IN ('Completed', 'Failed')),
    reason             text        NOT NULL,
    resolved_by        text        NOT NULL,
    at                 timestamptz NOT NULL,
    cluster            text        NOT NULL,
    recorded_at        timestamptz NOT NULL DEFAULT now()
);

-- Retention deletes by date, and reconciliation reads a time window.
CREATE INDEX paymentjob_outcomes_at ON paymentjob_outcomes (at);
