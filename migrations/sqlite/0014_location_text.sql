-- Each location's name and merchant_location_id, folded to one letter case (`t`), indexed by
-- their three-character pieces so that a list filtered by a piece of text finds its page in
-- the index; `m` names the merchant (`#<merchant_pk>#`), so that one merchant's search reads
-- only its own rows. The rowid is the location's `seq`. Only which rows and columns hold a piece
-- is kept (`detail=column`, no positions, no sizes): the text itself, kept beside, confirms a
-- match, and writes stay cheap. The rows of existing locations are written by the migration's
-- step in Rust (the folding is Unicode's, not SQLite's).
CREATE VIRTUAL TABLE location_text USING fts5(
    m, t, tokenize = 'trigram case_sensitive 1', detail = column, columnsize = 0
);
