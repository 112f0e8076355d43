-- The shared category taxonomy, and its version (bumped by every import; every instance polls it).

CREATE TABLE categories (
    id          TEXT    PRIMARY KEY,
    name        TEXT    NOT NULL,
    slug        TEXT    NOT NULL,
    parent_id   TEXT,
    leaf        BOOLEAN NOT NULL,
    sort_order  BIGINT,
    icon_url    TEXT,
    description TEXT,
    is_service  BOOLEAN,
    is_digital  BOOLEAN,
    status      TEXT    NOT NULL
);

CREATE TABLE taxonomy_version (
    singleton BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (singleton),
    version   BIGINT  NOT NULL
);

INSERT INTO taxonomy_version (version) VALUES (0);
