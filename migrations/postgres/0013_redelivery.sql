-- Getting deliveries back (CONTRACT §20). An endpoint keeps where its merchant's log stood when it
-- was created (`created_through`): a resend or a recovery takes only the events after it. An
-- attempt says what made it (`made_by`: `automatic`, `resend` or `test`); a test event has no
-- sequence. The log is filtered by outcome and by event, each read through an index of its own
-- (newest first), so that a page costs what it shows, however many attempts it skips.
ALTER TABLE webhooks ADD COLUMN created_through BIGINT NOT NULL DEFAULT 0;
UPDATE webhooks w SET created_through = coalesce(
    (SELECT max(e.sequence) FROM events e WHERE e.merchant_pk = w.merchant_pk AND e.appended_at < w.created_at), 0);

ALTER TABLE delivery_attempts ALTER COLUMN sequence DROP NOT NULL;
ALTER TABLE delivery_attempts ADD COLUMN made_by TEXT NOT NULL DEFAULT 'automatic';
CREATE INDEX delivery_attempts_by_outcome ON delivery_attempts (webhook_id, outcome, id);
CREATE INDEX delivery_attempts_by_event ON delivery_attempts (webhook_id, event_id, id);

-- A resend names its event by id: found through this index, within its merchant's log.
CREATE INDEX events_by_id ON events (merchant_pk, event_id);
