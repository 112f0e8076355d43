//! One cell, whatever file it came from: a CSV cell is text, a workbook's cell is
//! text, a number or a boolean, and every rule of reading one lives here once: numbers are never
//! guessed, booleans may be the words spreadsheet programs write in other languages, and a text
//! that a spreadsheet would run as a formula is quoted in a pulled CSV and unquoted when pushed.

use std::borrow::Cow;

/// A cell as its file holds it.
#[derive(Clone, Debug, PartialEq)]
pub enum Cell<'a> {
    Empty,
    Text(Cow<'a, str>),
    Number(f64),
    Bool(bool),
}

impl Cell<'_> {
    pub fn is_empty(&self) -> bool {
        match self {
            Cell::Empty => true,
            Cell::Text(text) => text.is_empty(),
            Cell::Number(_) | Cell::Bool(_) => false,
        }
    }
}

/// How a file writes what its text cells hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dialect {
    /// A number may be written with a decimal comma (a `;` or tab separated CSV).
    pub decimal_comma: bool,
    /// A text that begins with `'` before a formula's first character was quoted by `pull`
    /// (a CSV).
    pub quoted_formulas: bool,
}

impl Dialect {
    /// A workbook's text cells: a number only with a `.`, no formula quoting.
    pub const WORKBOOK: Dialect = Dialect {
        decimal_comma: false,
        quoted_formulas: false,
    };

    /// A CSV file with this delimiter.
    pub const fn csv(delimiter: u8) -> Dialect {
        Dialect {
            decimal_comma: delimiter != b',',
            quoted_formulas: true,
        }
    }
}

/// What a cell converts to where the field is a number or a boolean.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar<'a> {
    /// JSON number text.
    Number(String),
    Bool(bool),
    /// Not one: sent as this text, for the service to refuse at the field.
    Text(Cow<'a, str>),
}

impl<'a> Cell<'a> {
    /// The cell where the field is text: a number as a spreadsheet shows it (`7`, never `7.0`), a
    /// boolean as `true` / `false`, a CSV's quoted formula without its first `'`.
    pub fn text(&self, dialect: Dialect) -> Cow<'_, str> {
        match self {
            Cell::Empty => Cow::Borrowed(""),
            Cell::Text(text) if dialect.quoted_formulas => Cow::Borrowed(unquote_formula(text)),
            Cell::Text(text) => Cow::Borrowed(text),
            Cell::Number(n) => Cow::Owned(number_display(*n)),
            Cell::Bool(b) => Cow::Borrowed(if *b { "true" } else { "false" }),
        }
    }

    /// The cell where the field is a number: a number cell, or a text that spells one exactly.
    pub fn number(&'a self, dialect: Dialect) -> Scalar<'a> {
        match self {
            Cell::Number(n) => number_json(*n).map_or_else(|| Scalar::Text(Cow::Owned(n.to_string())), Scalar::Number),
            Cell::Text(text) => number_text(text, dialect.decimal_comma)
                .map_or_else(|| Scalar::Text(Cow::Borrowed(text)), Scalar::Number),
            Cell::Bool(b) => Scalar::Bool(*b),
            Cell::Empty => Scalar::Text(Cow::Borrowed("")),
        }
    }

    /// The cell where the field is a boolean: a boolean cell, or a text that is one of the words.
    pub fn boolean(&'a self, dialect: Dialect) -> Scalar<'a> {
        match self {
            Cell::Text(text) => boolean_word(text).map_or_else(|| Scalar::Text(Cow::Borrowed(text)), Scalar::Bool),
            other => other.number(dialect),
        }
    }
}

/// The words for true and false that spreadsheet programs write, in the languages push reads
/// (compared in lower case).
const BOOLEAN_WORDS: [(&str, &str); 9] = [
    ("true", "false"),
    ("истина", "ложь"),
    ("wahr", "falsch"),
    ("vrai", "faux"),
    ("verdadero", "falso"),
    ("vero", "falso"),
    ("verdadeiro", "falso"),
    ("prawda", "fałsz"),
    ("waar", "onwaar"),
];

/// A boolean written as a word, in any letter case.
pub fn boolean_word(text: &str) -> Option<bool> {
    let word = text.trim().to_lowercase();
    BOOLEAN_WORDS.iter().find_map(|(yes, no)| {
        if word == *yes {
            Some(true)
        } else if word == *no {
            Some(false)
        } else {
            None
        }
    })
}

/// A number cell's text as JSON number text, when it is exactly one: an optional
/// `-`, digits, at most one decimal separator (`.`, or with `decimal_comma` also `,`), then
/// optionally `e` or `E`, an optional sign and digits; white space around it is not part of it.
/// Anything else (`1.234,56`, `1 234`, `12 kg`, a number out of range) is not a number.
pub fn number_text(text: &str, decimal_comma: bool) -> Option<String> {
    let text = text.trim();
    let (negative, rest) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match rest.find(['e', 'E']) {
        Some(at) => (&rest[..at], Some(&rest[at + 1..])),
        None => (rest, None),
    };
    let (whole, fraction) = match mantissa.find(|c: char| c == '.' || (decimal_comma && c == ',')) {
        Some(at) => (&mantissa[..at], &mantissa[at + 1..]),
        None => (mantissa, ""),
    };
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !digits(fraction) || whole.len() + fraction.len() == 0 {
        return None;
    }
    let mut json = String::with_capacity(text.len() + 2);
    if negative {
        json.push('-');
    }
    let whole = whole.trim_start_matches('0');
    json.push_str(if whole.is_empty() { "0" } else { whole });
    if !fraction.is_empty() {
        json.push('.');
        json.push_str(fraction);
    }
    if let Some(exponent) = exponent {
        let unsigned = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
        if unsigned.is_empty() || !digits(unsigned) {
            return None;
        }
        json.push('e');
        json.push_str(exponent);
    }
    // In range as a JSON number the service reads (`1e400` is not).
    serde_json::from_str::<serde_json::Number>(&json).ok().map(|_| json)
}

/// A number as JSON number text: a whole number without a fraction; `None` when not finite.
fn number_json(n: f64) -> Option<String> {
    n.is_finite().then(|| number_display(n))
}

/// A number as a spreadsheet shows it: `7` for a whole number, else the shortest text that reads
/// back as the same number.
pub fn number_display(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        let mut buffer = Vec::new();
        match serde_json::to_writer(&mut buffer, &n) {
            Ok(()) => String::from_utf8(buffer).unwrap_or_default(),
            Err(_) => n.to_string(),
        }
    }
}

/// The first characters that make a spreadsheet program run a cell as a formula.
const FORMULA_STARTS: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];

/// Zero or more `'` and then a formula's first character.
fn looks_like_formula(text: &str) -> bool {
    text.trim_start_matches('\'').starts_with(FORMULA_STARTS)
}

/// A text value as a pulled CSV writes it: with one more `'` in front when it would otherwise be
/// run as a formula (or was quoted so).
pub fn quote_formula(text: &str) -> Cow<'_, str> {
    if looks_like_formula(text) {
        Cow::Owned(format!("'{text}"))
    } else {
        Cow::Borrowed(text)
    }
}

/// A CSV text cell as `push` reads it: `quote_formula` undone.
pub fn unquote_formula(text: &str) -> &str {
    match text.strip_prefix('\'') {
        Some(rest) if looks_like_formula(text) => rest,
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_read_exactly_or_not_at_all() {
        let cases = [
            ("55.7558", false, Some("55.7558")),
            (" 7 ", false, Some("7")),
            ("-0.5e-3", false, Some("-0.5e-3")),
            ("1E+2", false, Some("1e+2")),
            ("007", false, Some("7")),
            (".5", false, Some("0.5")),
            ("5.", false, Some("5")),
            ("55,7558", true, Some("55.7558")),
            ("55,7558", false, None),
            ("1.234,56", true, None),
            ("1,234.5", true, None),
            ("1 234", true, None),
            ("12 kg", false, None),
            ("+5", false, None),
            ("-", false, None),
            (".", false, None),
            ("1e", false, None),
            ("1e400", false, None),
            ("0x10", false, None),
            ("", false, None),
        ];
        for (text, comma, expected) in cases {
            assert_eq!(number_text(text, comma).as_deref(), expected, "{text:?} comma={comma}");
        }
    }

    #[test]
    fn booleans_may_be_the_words_of_other_languages() {
        for word in [
            "TRUE",
            "истина",
            "ИСТИНА",
            "Wahr",
            "VRAI",
            "verdadero",
            "VERO",
            "verdadeiro",
            "PRAWDA",
            "waar",
        ] {
            assert_eq!(boolean_word(word), Some(true), "{word}");
        }
        for word in ["false", "ЛОЖЬ", "FALSCH", "faux", "FALSO", "FAŁSZ", "fałsz", "onwaar"] {
            assert_eq!(boolean_word(word), Some(false), "{word}");
        }
        for word in ["yes", "1", "да", ""] {
            assert_eq!(boolean_word(word), None, "{word}");
        }
    }

    #[test]
    fn formulas_are_quoted_on_the_way_out_and_unquoted_on_the_way_in() {
        let cases = [
            ("=SUM(A1)", "'=SUM(A1)"),
            ("+7 495 000", "'+7 495 000"),
            ("-5 floor", "'-5 floor"),
            ("@home", "'@home"),
            ("\tindent", "'\tindent"),
            ("'=x", "''=x"),
            ("''-", "'''-"),
            ("'s-Hertogenbosch", "'s-Hertogenbosch"),
            ("plain", "plain"),
            ("", ""),
        ];
        for (value, written) in cases {
            assert_eq!(quote_formula(value), written, "{value:?}");
            assert_eq!(unquote_formula(written), value, "{written:?}");
        }
        let cell = Cell::Text(Cow::Borrowed("'=1+1"));
        assert_eq!(cell.text(Dialect::csv(b',')), "=1+1");
        assert_eq!(cell.text(Dialect::WORKBOOK), "'=1+1", "a workbook's text is its text");
    }

    #[test]
    fn a_cell_converts_by_its_field() {
        let csv = Dialect::csv(b';');
        assert_eq!(Cell::Number(7.0).text(csv), "7");
        assert_eq!(Cell::Number(55.7558).number(csv), Scalar::Number("55.7558".into()));
        assert_eq!(Cell::Bool(true).text(csv), "true");
        assert_eq!(Cell::Bool(false).boolean(csv), Scalar::Bool(false));
        assert_eq!(Cell::Text("ЛОЖЬ".into()).boolean(csv), Scalar::Bool(false));
        assert_eq!(Cell::Text("9,99".into()).number(csv), Scalar::Number("9.99".into()));
        assert_eq!(
            Cell::Text("9,99".into()).number(Dialect::csv(b',')),
            Scalar::Text("9,99".into())
        );
        assert_eq!(Cell::Number(f64::NAN).number(csv), Scalar::Text("NaN".into()));
    }
}
