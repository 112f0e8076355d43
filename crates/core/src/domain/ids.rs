//! The ids a request names things by.

/// Whether `id` may name something stored: no id the service issues (of a location, a key, an
/// import, a webhook or an event) and no `merchant_location_id` it accepts holds a control
/// character, so an id that holds one names nothing and need not be looked up. (PostgreSQL's text
/// cannot hold the null character at all: asked to compare with one, it refuses the statement.)
pub fn may_name(id: &str) -> bool {
    super::json::is_single_line(id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_with_a_control_character_names_nothing() {
        assert!(may_name("019ab5b2-7c1e-7d3a-9f1e-2c4d5e6f7a8b"));
        assert!(may_name("ПВЗ №7 / склад"));
        for id in ["a\u{0}b", "\u{0}", "\u{1}", "a\tb", "\u{7f}", "\u{9f}"] {
            assert!(!may_name(id), "{id:?}");
        }
    }
}
