-- Events (CONTRACT §18.1): each merchant's log of what changed. `event_logs` holds where a
-- merchant's log stands: the last sequence appended and the last one dropped by retention (a
-- cursor before it is expired). Its row is updated by every transaction that appends, and its
-- lock is held to the commit: the merchant's events are numbered in commit order, without gaps,
-- and a reader never sees sequence n+1 before n.
CREATE TABLE event_logs (
    merchant_pk    BIGINT PRIMARY KEY REFERENCES merchants(pk),
    last_sequence  BIGINT NOT NULL,
    pruned_through BIGINT NOT NULL DEFAULT 0
);

-- One row an event: its type (its place in the list of §18.1), when it was appended (unix
-- milliseconds, for retention), its id, and its JSON after `sequence` (a read puts `event_id` and
-- `sequence` in front: the same bytes every time it is read or delivered).
CREATE TABLE events (
    merchant_pk BIGINT   NOT NULL,
    sequence    BIGINT   NOT NULL,
    type        SMALLINT NOT NULL,
    appended_at BIGINT   NOT NULL,
    event_id    TEXT     NOT NULL,
    body        TEXT     NOT NULL,
    PRIMARY KEY (merchant_pk, sequence)
);

-- A feed filtered by type reads each type's events in sequence order.
CREATE INDEX events_by_type ON events (merchant_pk, type, sequence);

-- Webhooks (CONTRACT §18.3): a merchant's endpoints. `types` is the bit set of the event types it
-- takes (null: every type); `deleted_at` set once it is deleted (it no longer counts towards the
-- 10); `failing_since` the first failed attempt since the last delivered one. Every event of the
-- merchant after `delivered_through` is pending for it (stored by the event's own transaction);
-- an instance attempting the next ones holds them through `claimed_through` until `claim_until`.
CREATE TABLE webhooks (
    webhook_id       TEXT   PRIMARY KEY,
    merchant_pk      BIGINT NOT NULL REFERENCES merchants(pk),
    url              TEXT   NOT NULL,
    types            INTEGER,
    status           TEXT   NOT NULL,
    disabled_reason  TEXT,
    secret           TEXT   NOT NULL,
    old_secret       TEXT,
    old_secret_until BIGINT,
    created_at       BIGINT NOT NULL,
    deleted_at       BIGINT,
    failing_since    BIGINT,
    delivered_through BIGINT NOT NULL DEFAULT 0,
    claimed_through   BIGINT NOT NULL DEFAULT 0,
    claim_until       BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX webhooks_of_merchant ON webhooks (merchant_pk, created_at);

-- The events an endpoint failed to take, each tried again at `next_attempt_at`. A row is claimed
-- by the instance attempting it until `claim_until`; a claim that expires (its instance died) is
-- taken over by another (`FOR UPDATE SKIP LOCKED`).
CREATE TABLE deliveries (
    webhook_id      TEXT   NOT NULL,
    sequence        BIGINT NOT NULL,
    merchant_pk     BIGINT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at BIGINT NOT NULL,
    claim_until     BIGINT NOT NULL DEFAULT 0,
    appended_at     BIGINT NOT NULL,
    PRIMARY KEY (webhook_id, sequence)
);
CREATE INDEX deliveries_due ON deliveries (next_attempt_at);

-- Every attempt, newest first by `id` (CONTRACT §18.3 `deliveries`), kept as long as events.
CREATE TABLE delivery_attempts (
    id           BIGSERIAL PRIMARY KEY,
    webhook_id   TEXT    NOT NULL,
    event_id     TEXT    NOT NULL,
    sequence     BIGINT  NOT NULL,
    attempt      INTEGER NOT NULL,
    attempted_at BIGINT  NOT NULL,
    outcome      TEXT    NOT NULL,
    http_status  INTEGER,
    error        TEXT,
    duration_ms  BIGINT  NOT NULL
);
CREATE INDEX delivery_attempts_of_webhook ON delivery_attempts (webhook_id, id);
