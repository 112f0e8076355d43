//! The PostgreSQL schema's migrations, in the order they are applied (each once, recorded by
//! its number; a database migrated by a newer build is refused).

pub(super) const MIGRATIONS: &[&str] = &[
    include_str!("../../../migrations/postgres/0001_init.sql"),
    include_str!("../../../migrations/postgres/0002_categories.sql"),
    include_str!("../../../migrations/postgres/0003_location_records.sql"),
    include_str!("../../../migrations/postgres/0004_write_path.sql"),
    include_str!("../../../migrations/postgres/0005_search.sql"),
    include_str!("../../../migrations/postgres/0006_key_scope.sql"),
    include_str!("../../../migrations/postgres/0007_rate_budgets.sql"),
    include_str!("../../../migrations/postgres/0008_drop_band.sql"),
    include_str!("../../../migrations/postgres/0009_search_by_cell.sql"),
    include_str!("../../../migrations/postgres/0010_events.sql"),
    include_str!("../../../migrations/postgres/0011_compact_events.sql"),
    include_str!("../../../migrations/postgres/0012_claim_owner.sql"),
    include_str!("../../../migrations/postgres/0013_redelivery.sql"),
    include_str!("../../../migrations/postgres/0014_resent_through.sql"),
    include_str!("../../../migrations/postgres/0015_imports.sql"),
    include_str!("../../../migrations/postgres/0016_key_origins.sql"),
    include_str!("../../../migrations/postgres/0017_location_text.sql"),
    include_str!("../../../migrations/postgres/0018_import_files.sql"),
    include_str!("../../../migrations/postgres/0019_import_rows_lighter.sql"),
    include_str!("../../../migrations/postgres/0020_deliveries_due_by_endpoint.sql"),
];
