-- Each location's name and merchant_location_id, folded to one letter case by the service
-- (`search_text`), indexed by their three-character pieces with the merchant's key beside them,
-- so that a list filtered by a piece of text finds its page in the index. The text of existing
-- locations is written by the migration's step in Rust (the folding is Unicode's, the service's).
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS btree_gin;
ALTER TABLE locations ADD COLUMN search_text TEXT;
CREATE INDEX locations_text ON locations USING gin (merchant_pk, search_text gin_trgm_ops);
