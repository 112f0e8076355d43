-- Claims with an owner (issue 45): the instance holding an endpoint's window, or a retry row,
-- until `claim_until` (the database's clock, so that instances' clocks never decide who holds a
-- claim). It extends its claims while its attempts run, and records their results only where it
-- still holds them: a window taken over by another instance is settled once.
ALTER TABLE webhooks ADD COLUMN claim_owner TEXT;
ALTER TABLE deliveries ADD COLUMN claim_owner TEXT;
