-- Merchants, their API keys, their locations, and service-wide settings.
-- The same layout as migrations/sqlite/0001_init.sql; see the notes there.

CREATE TABLE merchants (
    pk         BIGSERIAL PRIMARY KEY,
    id         TEXT      NOT NULL UNIQUE,
    name       TEXT      NOT NULL,
    created_at BIGINT    NOT NULL
);

CREATE TABLE api_keys (
    key_id      TEXT   PRIMARY KEY,
    merchant_pk BIGINT NOT NULL REFERENCES merchants (pk),
    secret_hash BYTEA  NOT NULL,
    created_at  BIGINT NOT NULL,
    revoked_at  BIGINT
);

CREATE TABLE locations (
    seq                  BIGSERIAL        PRIMARY KEY,
    location_id          TEXT             NOT NULL UNIQUE,
    merchant_pk          BIGINT           NOT NULL REFERENCES merchants (pk),
    merchant_location_id TEXT,
    status               TEXT             NOT NULL,
    types                INTEGER          NOT NULL,
    latitude             DOUBLE PRECISION NOT NULL,
    longitude            DOUBLE PRECISION NOT NULL,
    band                 BIGINT           NOT NULL,
    body                 TEXT             NOT NULL,
    created_at           BIGINT           NOT NULL
);

-- Enforced by the database: two instances racing on one id can never store two rows.
CREATE UNIQUE INDEX locations_by_merchant_location_id
    ON locations (merchant_pk, merchant_location_id)
    WHERE merchant_location_id IS NOT NULL;

CREATE INDEX locations_nearby ON locations (merchant_pk, band, longitude);

CREATE TABLE meta (
    key   TEXT  PRIMARY KEY,
    value BYTEA NOT NULL
);
