//! Importing categories: the service's JSON format and the Google Product Taxonomy text format
//! (`json`, `google`, both yielding `record`s), and the checks on the set an import would produce.
//!
//! An import is all or nothing: `parse` and `merge` collect *every* problem, each naming the
//! record (JSON: its 0-based index) or line (Google: 1-based) at fault, and the store writes
//! nothing unless both succeed.

use std::collections::{HashMap, HashSet};

use super::Category;

mod google;
mod json;
mod record;

pub use self::record::{Origin, Parsed, Problem, Record, is_valid_slug, slugify};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Google,
}

/// JSON when the first significant character opens an array or object, Google otherwise.
pub fn detect(text: &str) -> Format {
    match text.trim_start_matches('\u{feff}').trim_start().chars().next() {
        Some('[' | '{') => Format::Json,
        _ => Format::Google,
    }
}

/// Parses a whole file.
pub fn parse(text: &str, format: Option<Format>) -> Parsed {
    let text = text.trim_start_matches('\u{feff}');
    match format.unwrap_or_else(|| detect(text)) {
        Format::Json => json::parse(text),
        Format::Google => google::parse(text),
    }
}

// ---- the resulting set ----------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Each record replaces the stored category with its id, as a whole; others stay.
    Upsert,
    /// The stored set becomes exactly the file.
    Replace,
}

/// The set an import of `parsed` over `stored` produces, or every problem of the import: those
/// found while parsing and those of the resulting set, in file order.
pub fn merge(stored: Vec<Category>, parsed: Parsed, mode: Mode) -> Result<Vec<Category>, Vec<Problem>> {
    let Parsed { records, mut problems } = parsed;
    let mut origins: HashMap<String, Origin> = HashMap::with_capacity(records.len());
    let mut incoming = Vec::with_capacity(records.len());
    for record in records {
        match origins.get(&record.category.id) {
            Some(first) => problems.push(Problem::at(
                record.origin,
                format!("id {:?} repeats {first}", record.category.id),
            )),
            None => {
                origins.insert(record.category.id.clone(), record.origin);
                incoming.push(record.category);
            }
        }
    }

    let mut set: Vec<Category> = match mode {
        Mode::Replace => Vec::new(),
        Mode::Upsert => stored.into_iter().filter(|c| !origins.contains_key(&c.id)).collect(),
    };
    set.extend(incoming);

    let index: HashMap<&str, usize> = set.iter().enumerate().map(|(i, c)| (c.id.as_str(), i)).collect();
    let origin_of = |c: &Category| origins.get(&c.id).copied();
    let report = |problems: &mut Vec<Problem>, c: &Category, message: String| {
        problems.push(Problem {
            origin: origin_of(c),
            message: match origin_of(c) {
                Some(_) => format!("(id {:?}) {message}", c.id),
                None => format!("stored category {:?}: {message}", c.id),
            },
        });
    };

    // Parents exist; a leaf has no children (the child is at fault, or the leaf when its
    // children are all stored ones).
    let mut leaves_reported = HashSet::new();
    for child in &set {
        let Some(parent_id) = &child.parent_id else { continue };
        let Some(&p) = index.get(parent_id.as_str()) else {
            report(
                &mut problems,
                child,
                format!("parent_id {parent_id:?} names no category"),
            );
            continue;
        };
        let parent = &set[p];
        if parent.leaf {
            if origin_of(child).is_some() {
                report(
                    &mut problems,
                    child,
                    format!("its parent {parent_id:?} is a leaf (leaf: true) and cannot have children"),
                );
            } else if origin_of(parent).is_some() && leaves_reported.insert(p) {
                report(&mut problems, parent, "leaf: true but it has children".into());
            }
        }
    }

    // Cycles: follow parents from every category, colouring as we go.
    let mut state = vec![0u8; set.len()]; // 0 unvisited, 1 on the current walk, 2 done
    for start in 0..set.len() {
        let mut walk = Vec::new();
        let mut at = Some(start);
        while let Some(i) = at {
            match state[i] {
                2 => break,
                1 => {
                    let cycle = &walk[walk.iter().position(|&w| w == i).unwrap_or(0)..];
                    let culprit = cycle
                        .iter()
                        .copied()
                        .filter(|&m| origin_of(&set[m]).is_some())
                        .min_by_key(|&m| origin_key(origin_of(&set[m])))
                        .unwrap_or(i);
                    let members: Vec<&str> = cycle.iter().map(|&m| set[m].id.as_str()).collect();
                    report(
                        &mut problems,
                        &set[culprit],
                        format!("parent_id makes a cycle: {}", members.join(" -> ")),
                    );
                    break;
                }
                _ => {
                    state[i] = 1;
                    walk.push(i);
                    at = set[i].parent_id.as_deref().and_then(|p| index.get(p).copied());
                }
            }
        }
        for i in walk {
            state[i] = 2;
        }
    }

    if problems.is_empty() {
        Ok(set)
    } else {
        problems.sort_by_key(|p| origin_key(p.origin));
        Err(problems)
    }
}

fn origin_key(origin: Option<Origin>) -> (usize, usize) {
    match origin {
        Some(Origin::Index(i) | Origin::Line(i)) => (0, i),
        None => (1, 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        assert_eq!(
            slugify("Bird Cage Food & Water Dishes", "7386"),
            "bird-cage-food-water-dishes-7386"
        );
        assert_eq!(slugify("Багажные ремни", "5652"), "bagazhnye-remni-5652");
        assert_eq!(slugify("!!!", "42"), "42");
        assert!(is_valid_slug("a-1"));
        for bad in ["", "-a", "a-", "a--b", "A", "a_b", "é"] {
            assert!(!is_valid_slug(bad), "{bad}");
        }
    }

    #[test]
    fn google_lines_parents_leaves_and_positions() {
        let text = "# v1\r\n2 - A > B\r\n1 - A\r\n\r\n3 - A > C\n4 - A > C > D\n";
        let records = parse(text, None).records;
        let by_id: HashMap<&str, &Category> = records.iter().map(|r| (r.category.id.as_str(), &r.category)).collect();
        assert_eq!(by_id["2"].parent_id.as_deref(), Some("1"));
        assert_eq!(by_id["1"].parent_id, None);
        assert!(!by_id["1"].leaf && by_id["2"].leaf && !by_id["3"].leaf && by_id["4"].leaf);
        assert_eq!((by_id["2"].sort_order, by_id["3"].sort_order), (Some(1), Some(2)));
        assert_eq!(records[0].origin, Origin::Line(2));
    }

    #[test]
    fn google_problems_name_their_lines() {
        let parsed = parse("1 - A\n1 A\n2 - A\n3 - X > Y\n1 - B\n", Some(Format::Google));
        let problems = merge(Vec::new(), parsed, Mode::Replace).err().unwrap_or_default();
        let lines: Vec<Option<Origin>> = problems.iter().map(|p| p.origin).collect();
        let expected = [2, 3, 4, 5].map(|n| Some(Origin::Line(n)));
        assert_eq!(lines, expected, "{problems:?}");
    }
}
