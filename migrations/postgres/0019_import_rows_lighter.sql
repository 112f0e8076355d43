-- An import's rows are written 200 at a time, with each batch of its file. Only an import that
-- archives the locations its file does not name looks its rows up by name, so the indexes for that
-- hold only such imports' rows (`for_archive`; the rows written before this all count as such).
-- Nor does each row check that its import exists: only the import's runner writes them, in
-- transactions that lock the import's row, and they are deleted before it.
ALTER TABLE import_rows DROP CONSTRAINT import_rows_import_pk_fkey;
ALTER TABLE import_rows ADD COLUMN for_archive BOOLEAN NOT NULL DEFAULT TRUE;
ALTER TABLE import_rows ALTER COLUMN for_archive DROP DEFAULT;
DROP INDEX import_rows_by_location;
DROP INDEX import_rows_by_name;
CREATE INDEX import_rows_by_location ON import_rows (import_pk, location_id) WHERE for_archive;
CREATE INDEX import_rows_by_name ON import_rows (import_pk, merchant_location_id) WHERE for_archive;
