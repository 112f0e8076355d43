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
-- milliseconds, for retention) and its JSON, the same bytes every time it is read or delivered.
CREATE TABLE events (
    merchant_pk BIGINT   NOT NULL,
    sequence    BIGINT   NOT NULL,
    type        SMALLINT NOT NULL,
    appended_at BIGINT   NOT NULL,
    body        TEXT     NOT NULL,
    PRIMARY KEY (merchant_pk, sequence)
);

-- A feed filtered by type reads each type's events in sequence order.
CREATE INDEX events_by_type ON events (merchant_pk, type, sequence);
