//! The Google Product Taxonomy's text format: a line a category, `id - Parent > Child`.

use std::collections::{HashMap, HashSet};

use super::record::{Origin, Parsed, Problem, Record, check_id, is_valid_slug, slugify};
use crate::domain::category::{Category, CategoryStatus};

struct GoogleLine<'a> {
    line: usize,
    id: &'a str,
    segments: Vec<&'a str>,
}

pub(super) fn parse(text: &str) -> Parsed {
    let mut problems = Vec::new();
    let mut lines = Vec::new();
    for (i, raw) in text.split('\n').enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let origin = Origin::Line(i + 1);
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let Some((id, path)) = line.split_once(" - ") else {
            problems.push(Problem::at(origin, "expected `ID - Top > Sub > Name`"));
            continue;
        };
        let id = id.trim();
        let segments: Vec<&str> = path.split(" > ").map(str::trim).collect();
        if let Err(message) = check_id(id) {
            problems.push(Problem::at(origin, message));
        } else if id.contains(char::is_whitespace) {
            problems.push(Problem::at(origin, "id must not contain white space"));
        } else if segments.iter().any(|s| s.is_empty()) {
            problems.push(Problem::at(origin, "every segment of the path must be non-empty"));
        } else {
            lines.push(GoogleLine {
                line: i + 1,
                id,
                segments,
            });
        }
    }

    // Paths, their lines, and which paths have children.
    let mut by_path: HashMap<Vec<&str>, usize> = HashMap::with_capacity(lines.len());
    let mut kept = Vec::with_capacity(lines.len());
    for (index, entry) in lines.iter().enumerate() {
        if let Some(&first) = by_path.get(&entry.segments) {
            let first_line = lines[first].line;
            problems.push(Problem::at(
                Origin::Line(entry.line),
                format!("the path repeats line {first_line}"),
            ));
        } else {
            by_path.insert(entry.segments.clone(), index);
            kept.push(index);
        }
    }
    let parents: HashSet<&[&str]> = kept
        .iter()
        .map(|&i| &lines[i].segments[..lines[i].segments.len() - 1])
        .filter(|p| !p.is_empty())
        .collect();

    let mut siblings_seen: HashMap<&[&str], i64> = HashMap::new();
    let mut records = Vec::with_capacity(kept.len());
    for &index in &kept {
        let entry = &lines[index];
        let origin = Origin::Line(entry.line);
        let parent_path = &entry.segments[..entry.segments.len() - 1];
        let parent_id = if parent_path.is_empty() {
            None
        } else if let Some(&p) = by_path.get(parent_path) {
            Some(lines[p].id.to_owned())
        } else {
            problems.push(Problem::at(
                origin,
                format!("parent {:?} is not in the file", parent_path.join(" > ")),
            ));
            continue;
        };
        let position = siblings_seen.entry(parent_path).or_insert(0);
        *position += 1;
        let name = entry.segments[entry.segments.len() - 1];
        records.push(Record {
            origin,
            category: Category {
                id: entry.id.to_owned(),
                name: name.to_owned(),
                slug: slugify(name, entry.id),
                parent_id,
                leaf: !parents.contains(&entry.segments[..]),
                sort_order: Some(*position),
                icon_url: None,
                description: None,
                is_service: None,
                is_digital: None,
                status: CategoryStatus::Active,
            },
        });
    }
    for record in &records {
        if !is_valid_slug(&record.category.slug) {
            problems.push(Problem::at(
                record.origin,
                format!("cannot derive a valid slug from id {:?}", record.category.id),
            ));
        }
    }
    Parsed { records, problems }
}
