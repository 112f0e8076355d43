-- The stored record of a location (CONTRACT §9.1) and the list's pages (§9.2).
-- `version` and `updated_at` change with every change of the location; `quarantined_by` names the
-- location that keeps a QUARANTINE one there (its `issue` is built from it). `body` is rewritten
-- to the record's content by the store's migration step (src/store/migrate.rs).
ALTER TABLE locations ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
ALTER TABLE locations ADD COLUMN updated_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE locations ADD COLUMN quarantined_by TEXT;
-- Approved by an operator (CONTRACT §10.5): ACTIVE until its coordinates change.
ALTER TABLE locations ADD COLUMN approved INTEGER NOT NULL DEFAULT 0;
UPDATE locations SET updated_at = created_at;

-- The quarantined locations that name a location, decided again when it is archived or moved.
CREATE INDEX locations_quarantined_by ON locations (merchant_pk, quarantined_by) WHERE quarantined_by IS NOT NULL;

-- One range per (merchant, status, types), in creation order (the rowid `seq` ends every index).
CREATE INDEX locations_pages ON locations (merchant_pk, status, types);

-- How many locations each merchant has per status and type set: the exact `total` of a page
-- without a scan, and the groups a page reads. Kept in the transaction of every write.
CREATE TABLE location_counts (
    merchant_pk INTEGER NOT NULL REFERENCES merchants (pk),
    status      TEXT    NOT NULL,
    types       INTEGER NOT NULL,
    n           INTEGER NOT NULL,
    PRIMARY KEY (merchant_pk, status, types)
) WITHOUT ROWID;

INSERT INTO location_counts (merchant_pk, status, types, n)
    SELECT merchant_pk, status, types, count(*) FROM locations GROUP BY merchant_pk, status, types;
