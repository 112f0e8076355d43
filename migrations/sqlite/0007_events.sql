-- Events (CONTRACT §18.1): each merchant's log of what changed. `event_logs` holds where a
-- merchant's log stands: the last sequence appended (numbered under the writer, so in commit
-- order and without gaps) and the last one dropped by retention (a cursor before it is expired).
CREATE TABLE event_logs (
    merchant_pk    INTEGER PRIMARY KEY REFERENCES merchants(pk),
    last_sequence  INTEGER NOT NULL,
    pruned_through INTEGER NOT NULL DEFAULT 0
);

-- One row an event: its type (its place in the list of §18.1), when it was appended (unix
-- milliseconds, for retention) and its JSON, the same bytes every time it is read or delivered.
CREATE TABLE events (
    merchant_pk INTEGER NOT NULL,
    sequence    INTEGER NOT NULL,
    type        INTEGER NOT NULL,
    appended_at INTEGER NOT NULL,
    body        TEXT    NOT NULL,
    PRIMARY KEY (merchant_pk, sequence)
) WITHOUT ROWID;

-- A feed filtered by type reads each type's events in sequence order.
CREATE INDEX events_by_type ON events (merchant_pk, type, sequence);
