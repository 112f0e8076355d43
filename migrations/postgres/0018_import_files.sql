-- An import's file in a row of its own. Every batch of an import updates the import's row (its
-- fence and its progress), and an update writes a new version of the row; the file stays out of
-- it. The file is dropped when its import ends.
CREATE TABLE import_files (
    import_pk BIGINT PRIMARY KEY REFERENCES imports (import_pk),
    content   BYTEA  NOT NULL
);
INSERT INTO import_files (import_pk, content)
SELECT import_pk, content FROM imports WHERE status IN ('QUEUED', 'RUNNING');
ALTER TABLE imports DROP COLUMN content;
