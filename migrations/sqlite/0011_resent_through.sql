-- The highest sequence a resend delivered to an endpoint (CONTRACT §20): a window looks for an
-- earlier delivery of its events (to skip them) only up to it, so that a window of an endpoint
-- never resent to (nearly all) reads its events without a probe of the attempts per event.
ALTER TABLE webhooks ADD COLUMN resent_through INTEGER NOT NULL DEFAULT 0;
