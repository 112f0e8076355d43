-- The search index (CONTRACT §12; src/domain/location/search/key.rs, src/domain/cells.rs): a
-- location's cell key (a Z-order code of its coordinates), its filter flags, its limits sorted for
-- the parcel test and its opening hours, written with the record in every write. The index is
-- ordered by merchant, status and cell and carries every column the search's scan tests, so a ring
-- of a search is one statement of a few range scans. The values of existing rows are filled in by
-- the store's migration step.
--
-- The quarantine's neighbour search (CONTRACT §4.5) reads this index too (a 50 m disk is a few key
-- ranges of it), so the older index by latitude band is dropped: one index fewer that every create
-- writes at a random place. The `band` column stays, unread.
ALTER TABLE locations
    ADD COLUMN cell  BIGINT           NOT NULL DEFAULT 0,
    ADD COLUMN flags BIGINT           NOT NULL DEFAULT 0,
    ADD COLUMN fit_a DOUBLE PRECISION NOT NULL DEFAULT 0,
    ADD COLUMN fit_b DOUBLE PRECISION NOT NULL DEFAULT 0,
    ADD COLUMN fit_c DOUBLE PRECISION NOT NULL DEFAULT 0,
    ADD COLUMN fit_w DOUBLE PRECISION NOT NULL DEFAULT 0,
    ADD COLUMN hours BYTEA            NOT NULL DEFAULT '\x';

CREATE INDEX locations_search ON locations (merchant_pk, status, cell)
    INCLUDE (flags, fit_a, fit_b, fit_c, fit_w, latitude, longitude, seq);

DROP INDEX IF EXISTS locations_nearby;
