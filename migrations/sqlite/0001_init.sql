-- Merchants, their API keys, their locations, and service-wide settings.

CREATE TABLE merchants (
    pk         INTEGER PRIMARY KEY,
    id         TEXT    NOT NULL UNIQUE,
    name       TEXT    NOT NULL,
    created_at INTEGER NOT NULL  -- unix milliseconds
);

-- Only a SHA-256 of each key's secret is kept; the key itself is shown once.
CREATE TABLE api_keys (
    key_id      TEXT    PRIMARY KEY,
    merchant_pk INTEGER NOT NULL REFERENCES merchants (pk),
    secret_hash BLOB    NOT NULL,
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER
) WITHOUT ROWID;

-- A location is stored as its canonical JSON (`body`) plus the few columns that are searched.
-- `seq` (the rowid) is the creation order; `band` is floor(latitude * 1000) for the neighbour
-- search (see src/domain/geo.rs). Two secondary indexes only: the create path is write-bound.
CREATE TABLE locations (
    seq                  INTEGER PRIMARY KEY,
    location_id          TEXT    NOT NULL UNIQUE,
    merchant_pk          INTEGER NOT NULL REFERENCES merchants (pk),
    merchant_location_id TEXT,
    status               TEXT    NOT NULL,
    types                INTEGER NOT NULL,
    latitude             REAL    NOT NULL,
    longitude            REAL    NOT NULL,
    band                 INTEGER NOT NULL,
    body                 TEXT    NOT NULL,
    created_at           INTEGER NOT NULL
);

CREATE UNIQUE INDEX locations_by_merchant_location_id
    ON locations (merchant_pk, merchant_location_id)
    WHERE merchant_location_id IS NOT NULL;

CREATE INDEX locations_nearby ON locations (merchant_pk, band, longitude);

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value BLOB NOT NULL
) WITHOUT ROWID;
