-- The search index (CONTRACT §12; src/domain/location/search/key.rs, src/domain/cells.rs): a
-- location's cell key (a Z-order code of its coordinates), its filter flags, its limits sorted for
-- the parcel test and its opening hours, written with the record in every write. The index holds,
-- per merchant and status, every column the search's scan tests, in cell order: one ring of a
-- search is a few range scans of it that never read a record. The values of existing rows are
-- filled in by the store's migration step.
--
-- The quarantine's neighbour search (CONTRACT §4.5) reads this index too (a 50 m disk is a few key
-- ranges of it), so the older index by latitude band is dropped: one index fewer that every create
-- writes at a random place. The `band` column stays, unread.
ALTER TABLE locations ADD COLUMN cell INTEGER NOT NULL DEFAULT 0;
ALTER TABLE locations ADD COLUMN flags INTEGER NOT NULL DEFAULT 0;
ALTER TABLE locations ADD COLUMN fit_a REAL NOT NULL DEFAULT 0;
ALTER TABLE locations ADD COLUMN fit_b REAL NOT NULL DEFAULT 0;
ALTER TABLE locations ADD COLUMN fit_c REAL NOT NULL DEFAULT 0;
ALTER TABLE locations ADD COLUMN fit_w REAL NOT NULL DEFAULT 0;
ALTER TABLE locations ADD COLUMN hours BLOB NOT NULL DEFAULT x'';

CREATE INDEX locations_search
    ON locations (merchant_pk, status, cell, flags, fit_a, fit_b, fit_c, fit_w, latitude, longitude);

DROP INDEX locations_nearby;
