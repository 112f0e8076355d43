//! `docs/api.md`: the API reference, rendered from the OpenAPI document the server serves, so
//! that what a user reads on GitHub is what `/docs` shows and can never drift from it
//! (`docs::the_committed_api_reference_is_the_documents`).

use std::fmt::Write;

use serde_json::{Map, Value};

/// The reference page of `doc`: every operation (its description, request body and answers),
/// the webhook a receiver gets, and every schema with each field's type, rule and meaning.
pub fn render(doc: &Value) -> String {
    let mut out = String::new();
    let title = doc["info"]["title"].as_str().unwrap_or("API");
    let _ = writeln!(out, "# {title}: API reference\n");
    out.push_str(
        "Generated from the OpenAPI document (`openapi.json`, served at `/openapi.json` and shown at\n\
         `/docs`) by `UPDATE_OPENAPI=1 cargo test --test api -- docs::`; CI fails when it drifts.\n\
         Do not edit by hand: change the document's source in `src/http/` instead.\n\n",
    );
    if let Some(about) = doc["info"]["description"].as_str() {
        let _ = writeln!(out, "{about}\n");
    }
    out.push_str("## Operations\n\n");
    let paths = doc["paths"].as_object().cloned().unwrap_or_default();
    for (path, item) in &paths {
        for method in item.as_object().into_iter().flatten().map(|(method, _)| method) {
            let _ = writeln!(
                out,
                "- [`{} {path}`](#{})",
                method.to_uppercase(),
                anchor(&format!("{method} {path}"))
            );
        }
    }
    out.push('\n');
    for (path, item) in &paths {
        for (method, op) in item.as_object().into_iter().flatten() {
            operation(&mut out, &format!("{} {path}", method.to_uppercase()), op);
        }
    }
    if let Some(hooks) = doc["webhooks"].as_object() {
        out.push_str("## Webhooks: what a receiver gets\n\n");
        for (name, item) in hooks {
            for (method, op) in item.as_object().into_iter().flatten() {
                operation(&mut out, &format!("{name} ({})", method.to_uppercase()), op);
            }
        }
    }
    out.push_str("## Schemas\n\n");
    for (name, schema) in doc["components"]["schemas"].as_object().into_iter().flatten() {
        schema_section(&mut out, name, schema);
    }
    out.trim_end().to_owned() + "\n"
}

/// A heading's GitHub anchor: lower case, spaces to dashes, other punctuation dropped.
fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

fn operation(out: &mut String, heading: &str, op: &Value) {
    let _ = writeln!(out, "### {heading}\n");
    if let Some(summary) = op["summary"].as_str() {
        let _ = writeln!(out, "**{summary}**\n");
    }
    if let Some(description) = op["description"].as_str() {
        let _ = writeln!(out, "{description}\n");
    }
    if let Some(params) = op["parameters"].as_array().filter(|p| !p.is_empty()) {
        out.push_str("Headers and parameters:\n\n");
        for p in params {
            let _ = writeln!(
                out,
                "- `{}` ({}{}): {}",
                p["name"].as_str().unwrap_or(""),
                p["in"].as_str().unwrap_or(""),
                if p["required"] == true { ", required" } else { "" },
                one_line(p["description"].as_str().unwrap_or(""))
            );
        }
        out.push('\n');
    }
    if let Some(body) = op["requestBody"].as_object() {
        let schema = &body["content"]["application/json"]["schema"];
        let _ = writeln!(
            out,
            "Request body{}: {}\n",
            if body.get("required") == Some(&Value::Bool(true)) {
                ""
            } else {
                " (optional)"
            },
            type_of(schema)
        );
    }
    if let Some(answers) = op["responses"].as_object() {
        out.push_str("| answer | body | when |\n|---|---|---|\n");
        for (code, answer) in answers {
            let schema = answer["content"]
                .as_object()
                .and_then(|c| c.values().next())
                .map(|media| type_of(&media["schema"]))
                .unwrap_or_else(|| "—".to_owned());
            let _ = writeln!(
                out,
                "| {code} | {schema} | {} |",
                cell(answer["description"].as_str().unwrap_or(""))
            );
        }
        out.push('\n');
    }
}

fn schema_section(out: &mut String, name: &str, schema: &Value) {
    let _ = writeln!(out, "### {name}\n");
    if let Some(description) = schema["description"].as_str() {
        let _ = writeln!(out, "{description}\n");
    }
    if schema.get("$ref").is_some() {
        let _ = writeln!(
            out,
            "Typed as {}.\n",
            type_of(&Value::Object(without_description(schema)))
        );
        return;
    }
    if let Some(values) = schema["enum"].as_array() {
        let values: Vec<String> = values.iter().map(|v| format!("`{}`", plain(v))).collect();
        let _ = writeln!(out, "One of: {}.\n", values.join(", "));
        return;
    }
    let Some(properties) = schema["properties"].as_object() else {
        let _ = writeln!(out, "{}\n", type_of(schema));
        return;
    };
    let required: Vec<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    out.push_str("| field | type | required | rule and meaning |\n|---|---|---|---|\n");
    for (field, property) in properties {
        let _ = writeln!(
            out,
            "| `{field}` | {} | {} | {} |",
            type_of(property),
            if required.contains(&field.as_str()) {
                "yes"
            } else {
                "no"
            },
            cell(&rule_and_meaning(property))
        );
    }
    if schema["additionalProperties"] == false {
        out.push_str("\nNo other field is accepted.\n");
    }
    out.push('\n');
}

fn without_description(schema: &Value) -> Map<String, Value> {
    let mut map = schema.as_object().cloned().unwrap_or_default();
    map.remove("description");
    map
}

/// A schema's type in words, with links to the named schemas.
fn type_of(schema: &Value) -> String {
    if let Some(reference) = schema["$ref"].as_str() {
        let name = reference.rsplit('/').next().unwrap_or(reference);
        return format!("[{name}](#{})", anchor(name));
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(choices) = schema[key].as_array() {
            let names: Vec<String> = choices.iter().map(type_of).collect();
            return names.join(" or ");
        }
    }
    if let Some(all) = schema["allOf"].as_array() {
        let names: Vec<String> = all.iter().map(type_of).collect();
        return names.join(" and ");
    }
    if let Some(values) = schema["enum"].as_array() {
        let values: Vec<String> = values.iter().map(|v| format!("`{}`", plain(v))).collect();
        return values.join(", ");
    }
    let types: Vec<String> = match &schema["type"] {
        Value::String(t) => vec![t.clone()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => vec![if schema.get("properties").is_some() {
            "object".into()
        } else {
            "any".into()
        }],
    };
    types
        .iter()
        .map(|t| match t.as_str() {
            "array" => format!("array of {}", type_of(&schema["items"])),
            other => other.to_owned(),
        })
        .collect::<Vec<_>>()
        .join(" or ")
}

/// A property's constraints and description, in one line.
fn rule_and_meaning(property: &Value) -> String {
    let mut rules = Vec::new();
    for (key, words) in [
        ("minLength", "at least {} characters"),
        ("maxLength", "at most {} characters"),
        ("minimum", "≥ {}"),
        ("exclusiveMinimum", "> {}"),
        ("maximum", "≤ {}"),
        ("exclusiveMaximum", "< {}"),
        ("minItems", "at least {} items"),
        ("maxItems", "at most {} items"),
        ("pattern", "matches `{}`"),
        ("format", "format {}"),
    ] {
        if let Some(value) = property.get(key) {
            rules.push(words.replace("{}", &plain(value)));
        }
    }
    if property["uniqueItems"] == true {
        rules.push("no repeats".into());
    }
    let description = one_line(property["description"].as_str().unwrap_or(""));
    match (rules.is_empty(), description.is_empty()) {
        (true, _) => description,
        (false, true) => rules.join(", "),
        (false, false) => format!("{}. {description}", rules.join(", ")),
    }
}

fn plain(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Text fit for a table cell: on one line, its pipes escaped.
fn cell(text: &str) -> String {
    one_line(text).replace('|', "\\|")
}
