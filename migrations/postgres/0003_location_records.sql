-- The stored record of a location (CONTRACT §9.1) and the list's pages (§9.2); the same layout
-- as migrations/sqlite/0003_location_records.sql, see the notes there.
ALTER TABLE locations
    ADD COLUMN version        BIGINT NOT NULL DEFAULT 1,
    ADD COLUMN updated_at     BIGINT,
    ADD COLUMN quarantined_by TEXT,
    ADD COLUMN approved       BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE locations SET updated_at = created_at;
ALTER TABLE locations ALTER COLUMN updated_at SET NOT NULL;

CREATE INDEX locations_quarantined_by ON locations (merchant_pk, quarantined_by) WHERE quarantined_by IS NOT NULL;

CREATE INDEX locations_pages ON locations (merchant_pk, status, types, seq);

CREATE TABLE location_counts (
    merchant_pk BIGINT  NOT NULL REFERENCES merchants (pk),
    status      TEXT    NOT NULL,
    types       INTEGER NOT NULL,
    n           BIGINT  NOT NULL,
    PRIMARY KEY (merchant_pk, status, types)
);

INSERT INTO location_counts (merchant_pk, status, types, n)
    SELECT merchant_pk, status, types, count(*) FROM locations GROUP BY merchant_pk, status, types;
