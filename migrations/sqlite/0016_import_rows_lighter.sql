-- An import's rows are written 200 at a time, with each batch of its file. Only an import that
-- archives the locations its file does not name looks its rows up by name, so the indexes for that
-- hold only such imports' rows (`for_archive`; the rows written before this all count as such).
-- Nor does each row check that its import exists: only the import's runner writes them, in
-- transactions fenced by the import's row, and they are deleted before it. (SQLite drops a
-- foreign key only with its table: the table is made again.)
CREATE TABLE import_rows_new (
    import_pk            INTEGER NOT NULL,
    ordinal              INTEGER NOT NULL,
    file_row             INTEGER NOT NULL,
    merchant_location_id TEXT,
    location_id          TEXT,
    outcome              TEXT    NOT NULL,
    errors               TEXT    NOT NULL,
    for_archive          INTEGER NOT NULL,
    PRIMARY KEY (import_pk, ordinal)
) WITHOUT ROWID;
INSERT INTO import_rows_new
SELECT import_pk, ordinal, file_row, merchant_location_id, location_id, outcome, errors, 1 FROM import_rows;
DROP TABLE import_rows;
ALTER TABLE import_rows_new RENAME TO import_rows;
CREATE INDEX import_rows_failed ON import_rows (import_pk, ordinal) WHERE outcome = 'failed';
-- `for_archive` is a column of these indexes too, though they hold only its rows that are true:
-- without it SQLite takes the indexes for ones that do not cover the test, and prefers scanning
-- the import's rows by their primary key.
CREATE INDEX import_rows_by_location ON import_rows (import_pk, location_id, for_archive) WHERE for_archive;
CREATE INDEX import_rows_by_name ON import_rows (import_pk, merchant_location_id, for_archive) WHERE for_archive;
