-- What a key may call (CONTRACT §13.1): `full` (every key issued before this migration) or
-- `storefront` (search and the category list, for a key published in a web page).
ALTER TABLE api_keys ADD COLUMN scope TEXT NOT NULL DEFAULT 'full'
    CHECK (scope IN ('full', 'storefront'));
