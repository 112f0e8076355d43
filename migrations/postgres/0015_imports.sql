-- A merchant's file handed to the service, and what became of each of its rows. The file is kept
-- with its import (several runs may read it: a killed one resumes at `rows_done`); `owner` and
-- `claim_until` say which runner holds it, as webhook claims do.
CREATE TABLE imports (
    import_pk       BIGSERIAL PRIMARY KEY,
    import_id       TEXT    NOT NULL UNIQUE,
    merchant_pk     BIGINT  NOT NULL REFERENCES merchants (pk),
    file_name       TEXT    NOT NULL,
    content         BYTEA   NOT NULL,
    sheet           TEXT,
    do_update       BOOLEAN NOT NULL,
    archive_missing BOOLEAN NOT NULL,
    dry_run         BOOLEAN NOT NULL,
    status          TEXT    NOT NULL,
    rows_total      BIGINT,
    rows_done       BIGINT  NOT NULL DEFAULT 0,
    created         BIGINT  NOT NULL DEFAULT 0,
    updated         BIGINT  NOT NULL DEFAULT 0,
    unchanged       BIGINT  NOT NULL DEFAULT 0,
    quarantined     BIGINT  NOT NULL DEFAULT 0,
    archived        BIGINT  NOT NULL DEFAULT 0,
    failed          BIGINT  NOT NULL DEFAULT 0,
    -- Where archive_missing stands: the last location (by seq) it looked at.
    archive_after   BIGINT  NOT NULL DEFAULT 0,
    error_code      TEXT,
    error_message   TEXT,
    created_at      BIGINT  NOT NULL,
    started_at      BIGINT,
    finished_at     BIGINT,
    owner           TEXT,
    claim_until     BIGINT  NOT NULL DEFAULT 0
);

CREATE INDEX imports_by_merchant ON imports (merchant_pk, import_pk);
CREATE INDEX imports_to_run ON imports (status, claim_until) WHERE status IN ('QUEUED', 'RUNNING');
CREATE INDEX imports_ended ON imports (finished_at) WHERE finished_at IS NOT NULL;

-- `ordinal` is the row's place among the file's rows (0-based); `file_row` the report's row number.
CREATE TABLE import_rows (
    import_pk            BIGINT  NOT NULL REFERENCES imports (import_pk) ON DELETE CASCADE,
    ordinal              BIGINT  NOT NULL,
    file_row             BIGINT  NOT NULL,
    merchant_location_id TEXT,
    location_id          TEXT,
    outcome              TEXT    NOT NULL,
    errors               TEXT    NOT NULL,
    PRIMARY KEY (import_pk, ordinal)
);

CREATE INDEX import_rows_failed ON import_rows (import_pk, ordinal) WHERE outcome = 'failed';
CREATE INDEX import_rows_by_location ON import_rows (import_pk, location_id);
CREATE INDEX import_rows_by_name ON import_rows (import_pk, merchant_location_id);
