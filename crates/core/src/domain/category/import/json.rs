//! The service's JSON format of categories: an array of records, each checked field by field.

use serde_json::{Map, Value};

use super::record::{Origin, Parsed, Problem, Record, check_id, is_valid_slug};
use crate::domain::category::{Category, CategoryStatus};

const KEYS: &[&str] = &[
    "id",
    "name",
    "slug",
    "parent_id",
    "leaf",
    "sort_order",
    "icon_url",
    "description",
    "is_service",
    "is_digital",
    "status",
];

pub(super) fn parse(text: &str) -> Parsed {
    let file_problem = |message: String| Parsed {
        records: Vec::new(),
        problems: vec![Problem { origin: None, message }],
    };
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(e) => return file_problem(format!("not valid JSON: {e}")),
    };
    let items = match value {
        Value::Array(items) => items,
        Value::Object(mut wrapper) => match (wrapper.remove("categories"), wrapper.keys().next()) {
            (_, Some(key)) => {
                return file_problem(format!("unknown top-level key {key:?}; expected only \"categories\""));
            }
            (Some(Value::Array(items)), None) => items,
            _ => return file_problem("expected a JSON array of categories, or {\"categories\": [...]}".into()),
        },
        _ => return file_problem("expected a JSON array of categories, or {\"categories\": [...]}".into()),
    };
    let mut records = Vec::with_capacity(items.len());
    let mut problems = Vec::new();
    for (i, item) in items.iter().enumerate() {
        match json_record(item) {
            Ok(category) => records.push(Record {
                origin: Origin::Index(i),
                category,
            }),
            Err(messages) => problems.extend(messages.into_iter().map(|m| Problem::at(Origin::Index(i), m))),
        }
    }
    Parsed { records, problems }
}

/// One JSON record, or every problem it has.
fn json_record(item: &Value) -> Result<Category, Vec<String>> {
    let Value::Object(object) = item else {
        return Err(vec!["must be an object".into()]);
    };
    let mut problems = Vec::new();
    for key in object.keys().filter(|k| !KEYS.contains(&k.as_str())) {
        problems.push(format!("unknown key {key:?}"));
    }
    let mut field = Fields {
        object,
        problems: &mut problems,
    };
    let id = field.string("id");
    let name = field.string("name");
    let slug = field.string("slug");
    let parent_id = field.optional_string("parent_id").filter(|p| !p.is_empty());
    let leaf = field.boolean("leaf");
    let sort_order = field.optional_integer("sort_order");
    let icon_url = field.optional_string("icon_url");
    let description = field.optional_string("description");
    let is_service = field.optional_boolean("is_service");
    let is_digital = field.optional_boolean("is_digital");
    let status = field.string("status").and_then(|s| {
        let status = CategoryStatus::from_wire(&s);
        if status.is_none() {
            problems.push(format!("status {s:?} must be \"active\" or \"disabled\""));
        }
        status
    });
    if let Some(Err(message)) = id.as_deref().map(check_id) {
        problems.push(message);
    }
    if name.as_deref().is_some_and(|n| n.trim().is_empty()) {
        problems.push("name must not be empty".into());
    }
    if let Some(slug) = slug.as_deref().filter(|s| !is_valid_slug(s)) {
        problems.push(format!("slug {slug:?} must match ^[a-z0-9]+(-[a-z0-9]+)*$"));
    }
    if let Some(id) = &id {
        for p in &mut problems {
            *p = format!("(id {id:?}) {p}");
        }
    }
    match (id, name, slug, leaf, status) {
        (Some(id), Some(name), Some(slug), Some(leaf), Some(status)) if problems.is_empty() => Ok(Category {
            id,
            name,
            slug,
            parent_id,
            leaf,
            sort_order,
            icon_url,
            description,
            is_service,
            is_digital,
            status,
        }),
        _ => Err(problems),
    }
}

struct Fields<'a> {
    object: &'a Map<String, Value>,
    problems: &'a mut Vec<String>,
}

impl Fields<'_> {
    fn present(&self, key: &str) -> Option<&Value> {
        self.object.get(key).filter(|v| !v.is_null())
    }

    fn required(&mut self, key: &str) -> Option<&Value> {
        let value = self.object.get(key).filter(|v| !v.is_null());
        if value.is_none() {
            self.problems.push(format!("{key} is required"));
        }
        value
    }

    fn typed<T>(
        &mut self,
        key: &str,
        value: Option<&Value>,
        expected: &str,
        get: impl Fn(&Value) -> Option<T>,
    ) -> Option<T> {
        let value = value?;
        let typed = get(value);
        if typed.is_none() {
            self.problems.push(format!("{key} must be {expected}"));
        }
        typed
    }

    fn string(&mut self, key: &str) -> Option<String> {
        let value = self.required(key).cloned();
        self.typed(key, value.as_ref(), "a string", |v| v.as_str().map(str::to_owned))
    }

    fn optional_string(&mut self, key: &str) -> Option<String> {
        let value = self.present(key).cloned();
        self.typed(key, value.as_ref(), "a string or null", |v| {
            v.as_str().map(str::to_owned)
        })
    }

    fn boolean(&mut self, key: &str) -> Option<bool> {
        let value = self.required(key).cloned();
        self.typed(key, value.as_ref(), "a boolean", Value::as_bool)
    }

    fn optional_boolean(&mut self, key: &str) -> Option<bool> {
        let value = self.present(key).cloned();
        self.typed(key, value.as_ref(), "a boolean or null", Value::as_bool)
    }

    fn optional_integer(&mut self, key: &str) -> Option<i64> {
        let value = self.present(key).cloned();
        self.typed(key, value.as_ref(), "an integer or null", |v| {
            v.as_i64().or_else(|| {
                v.as_f64()
                    .filter(|f| f.fract() == 0.0 && f.abs() < 9.0e15)
                    .map(|f| f as i64)
            })
        })
    }
}
