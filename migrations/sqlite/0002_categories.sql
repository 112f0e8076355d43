-- The shared category taxonomy. `meta` holds `taxonomy_version` (bumped by every import, polled
-- by servers to refresh their in-memory snapshot) and `cursor_secret` (the list cursors' HMAC key).

CREATE TABLE categories (
    id          TEXT    PRIMARY KEY,
    name        TEXT    NOT NULL,
    slug        TEXT    NOT NULL,
    parent_id   TEXT,
    leaf        INTEGER NOT NULL,
    sort_order  INTEGER,
    icon_url    TEXT,
    description TEXT,
    is_service  INTEGER,
    is_digital  INTEGER,
    status      TEXT    NOT NULL
) WITHOUT ROWID;

INSERT INTO meta (key, value) VALUES ('taxonomy_version', 0);
