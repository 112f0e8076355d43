-- Retries are claimed endpoint by endpoint: each endpoint with retry rows offers its rows due
-- first, found in this index whatever the backlogs of other endpoints (the rows of one that has
-- no room for attempts are no longer read past). No statement reads retries by time alone now.
DROP INDEX deliveries_due;
CREATE INDEX deliveries_due ON deliveries (webhook_id, next_attempt_at);
