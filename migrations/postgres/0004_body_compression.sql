-- A location's stored record (its `body`, 1–3 KB of JSON) is compressed when the row passes
-- PostgreSQL's 2 KB toast threshold. With the default method (pglz) that compression was a fifth of
-- PostgreSQL's CPU under a create load; lz4 does it at a fraction of the cost. A server built
-- without lz4 keeps pglz: nothing else depends on the method.
DO $$
BEGIN
    ALTER TABLE locations ALTER COLUMN body SET COMPRESSION lz4;
EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN
    NULL;
END
$$;
