-- The search index orders a merchant's locations by cell before status: a key range of cells is
-- then one descent of the index whatever statuses are asked, the status tested on the entry. The
-- 50 m rule asks two (ACTIVE and QUARANTINE), and with the status first each of a point's key
-- ranges was two descents: at 200 new locations a create, the neighbour statement made 26 buffer
-- visits a location, more than twice the latitude-band index it replaced (issue 37). A search
-- asks ACTIVE only, and reads the few other entries of its ranges (archived, quarantined) from the
-- index without visiting their rows.
DROP INDEX locations_search;
CREATE INDEX locations_search ON locations (merchant_pk, cell, status)
    INCLUDE (flags, fit_a, fit_b, fit_c, fit_w, latitude, longitude, seq);
