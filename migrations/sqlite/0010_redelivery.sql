-- Getting deliveries back (CONTRACT §20). An endpoint keeps where its merchant's log stood when it
-- was created (`created_through`): a resend or a recovery takes only the events after it. An
-- attempt says what made it (`made_by`: `automatic`, `resend` or `test`); a test event has no
-- sequence. The log is filtered by outcome and by event, each read through an index of its own
-- (newest first), so that a page costs what it shows, however many attempts it skips.
ALTER TABLE webhooks ADD COLUMN created_through INTEGER NOT NULL DEFAULT 0;
UPDATE webhooks SET created_through = coalesce(
    (SELECT max(e.sequence) FROM events e
     WHERE e.merchant_pk = webhooks.merchant_pk AND e.appended_at < webhooks.created_at), 0);

CREATE TABLE delivery_attempts_v2 (
    id           INTEGER PRIMARY KEY,
    webhook_id   TEXT    NOT NULL,
    event_id     TEXT    NOT NULL,
    sequence     INTEGER,
    attempt      INTEGER NOT NULL,
    attempted_at INTEGER NOT NULL,
    outcome      TEXT    NOT NULL,
    http_status  INTEGER,
    error        TEXT,
    duration_ms  INTEGER NOT NULL,
    made_by      TEXT    NOT NULL DEFAULT 'automatic'
);
INSERT INTO delivery_attempts_v2 (id, webhook_id, event_id, sequence, attempt, attempted_at, outcome, http_status,
                                  error, duration_ms)
SELECT id, webhook_id, event_id, sequence, attempt, attempted_at, outcome, http_status, error, duration_ms
FROM delivery_attempts;
DROP TABLE delivery_attempts;
ALTER TABLE delivery_attempts_v2 RENAME TO delivery_attempts;

CREATE INDEX delivery_attempts_of_webhook ON delivery_attempts (webhook_id, id);
CREATE INDEX delivery_attempts_by_outcome ON delivery_attempts (webhook_id, outcome, id);
CREATE INDEX delivery_attempts_by_event ON delivery_attempts (webhook_id, event_id, id);

-- A resend names its event by id: found through this index, within its merchant's log.
CREATE INDEX events_by_id ON events (merchant_pk, event_id);
