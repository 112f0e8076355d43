//! Finding a location by a piece of its name or of the merchant's id for it: the text a list
//! filter asks for and the text each location is indexed by, both folded the same way, so that
//! either engine's index finds a location exactly when its name or its id contains the text,
//! whatever the letter case.

/// Most characters a text filter may have.
pub const MAX_CHARS: usize = 100;

/// Between the name and the id in the indexed text: a character no name holds (names refuse
/// control characters), so that no text is found across the two.
const SEPARATOR: char = '\u{1}';

/// `text` in one letter case: each character by its simple (one-to-one) lower-case mapping, and
/// the final sigma as the other sigma, as Unicode's simple case folding does.
pub fn fold(text: &str) -> String {
    text.chars()
        .map(|c| {
            let mut lower = c.to_lowercase();
            match (lower.next(), lower.next()) {
                (Some('ς'), None) => 'σ',
                (Some(one), None) => one,
                _ => c,
            }
        })
        .collect()
}

/// What a location is indexed by: its folded name and id.
pub fn indexed(name: &str, merchant_location_id: Option<&str>) -> String {
    let mut text = fold(name);
    text.push(SEPARATOR);
    text.push_str(&fold(merchant_location_id.unwrap_or("")));
    text
}

/// Whether any location's name or id can contain `text`: neither holds a control character (the
/// separator between them in the index is one), so a text with one matches no location, and no
/// engine's index is asked for it (where its patterns would take such a character otherwise).
pub fn findable(text: &str) -> bool {
    crate::domain::json::is_single_line(text)
}

/// Whether a location indexed by `indexed` text matches the folded `text`.
pub fn matches(indexed: &str, text: &str) -> bool {
    indexed.split(SEPARATOR).any(|part| part.contains(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letter_case_is_ignored_in_every_script() {
        assert_eq!(fold("Пункт ВЫДАЧИ Nº 7"), "пункт выдачи nº 7");
        assert_eq!(fold("ΟΔΟΣ"), "οδοσ");
        assert_eq!(fold("οδος"), "οδοσ");
        assert_eq!(fold("İ"), "İ", "no one-to-one mapping: kept");
        let indexed = indexed("Пункт выдачи Тверская", Some("PVZ-0157"));
        assert!(matches(&indexed, &fold("ТВЕР")));
        assert!(matches(&indexed, &fold("pvz-01")));
        assert!(
            !matches(&indexed, &fold("тверская pvz")),
            "never across the name and the id"
        );
        assert!(!matches(&self::indexed("A", None), &fold("b")));
        for text in ["\u{0}", "\u{1}", "a\u{1}p", "\t", "\u{7f}", "\u{85}"] {
            assert!(!findable(text), "{text:?}");
            assert!(!matches(&indexed, text), "{text:?}");
        }
        assert!(findable("pvz-01 Тверская №7"));
    }
}
