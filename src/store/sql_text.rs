//! SQL text written once for both engines: each engine's parameter mark.

/// The statement with `$n` parameters, as `mark` numbers them (`?` for SQLite, `$` for
/// PostgreSQL).
pub fn marked(sql: &str, mark: char) -> String {
    sql.replace('$', &mark.to_string())
}
