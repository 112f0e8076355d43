-- The 50 m rule finds neighbours by one geometry, the search index's cells (migration 4): the
-- latitude band that every write still computed and stored is read by nothing, so it goes.
ALTER TABLE locations DROP COLUMN band;
