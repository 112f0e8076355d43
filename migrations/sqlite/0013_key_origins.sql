-- Keys a merchant makes through the API carry a label and, for a storefront key, the web origins
-- it may be used from (a JSON array; NULL: any origin the service allows). `key_origins` holds the
-- origins of the keys not revoked, so that a browser's origin is found by one index lookup.
ALTER TABLE api_keys ADD COLUMN label TEXT;
ALTER TABLE api_keys ADD COLUMN allowed_origins TEXT;

CREATE INDEX api_keys_by_merchant ON api_keys (merchant_pk, created_at, key_id);

CREATE TABLE key_origins (
    origin TEXT NOT NULL,
    key_id TEXT NOT NULL REFERENCES api_keys (key_id),
    PRIMARY KEY (origin, key_id)
) WITHOUT ROWID;
