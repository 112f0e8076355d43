-- The merchants' rate budgets that every instance shares (CONTRACT §15): a token bucket per
-- policy and merchant, `units` as of `at` (the database's clock, seconds since the epoch), and
-- what the last take granted. Instances take units ahead in small leases, never per request.
-- UNLOGGED: no WAL for a budget; after a crash of the server the budgets start full again.
CREATE UNLOGGED TABLE rate_budgets (
    policy  TEXT             NOT NULL,
    key     BIGINT           NOT NULL,
    units   DOUBLE PRECISION NOT NULL,
    at      DOUBLE PRECISION NOT NULL,
    granted INTEGER          NOT NULL,
    PRIMARY KEY (policy, key)
);

-- The instances alive, by their heartbeats: while the budgets cannot be reached each instance
-- limits on its share, rate ÷ the number of instances last seen.
CREATE UNLOGGED TABLE rate_instances (
    instance TEXT             PRIMARY KEY,
    seen_at  DOUBLE PRECISION NOT NULL
);
