-- An import's file in a row of its own. Every batch of an import updates the import's row (its
-- fence and its progress); with the file in that row, each batch rewrote up to 6 MiB into the
-- write-ahead log. The file is dropped when its import ends.
CREATE TABLE import_files (
    import_pk INTEGER PRIMARY KEY REFERENCES imports (import_pk),
    content   BLOB    NOT NULL
);
INSERT INTO import_files (import_pk, content)
SELECT import_pk, content FROM imports WHERE status IN ('QUEUED', 'RUNNING');
ALTER TABLE imports DROP COLUMN content;
