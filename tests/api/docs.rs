//! The operational surface (CONTRACT §7): the OpenAPI document (and its committed copy), the docs
//! page, metrics.

use reqwest::Method;
use serde_json::json;

use crate::helpers::*;

const COMMITTED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/openapi.json");
const REFERENCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/api.md");

#[tokio::test]
async fn the_committed_openapi_json_is_the_served_one() {
    let app = TestApp::spawn().await;
    let served = read(app.request(Method::GET, "/openapi.json")).await;
    assert_eq!(served.status, 200);
    let pretty = serde_json::to_string_pretty(&served.body).unwrap() + "\n";
    assert_committed(COMMITTED, &pretty, "openapi.json");
}

/// `path` holds `fresh` (written there first when `UPDATE_OPENAPI=1`).
fn assert_committed(path: &str, fresh: &str, name: &str) {
    if std::env::var("UPDATE_OPENAPI").is_ok_and(|v| v == "1") {
        std::fs::write(path, fresh).unwrap();
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        committed == fresh,
        "{name} is out of date: run `UPDATE_OPENAPI=1 cargo test --test api -- docs::` and commit it"
    );
}

/// What a client generated from the document gets (openapi-typescript, openapi-python-client): the
/// items of create, update, archive and restore typed as their inputs (an `anyOf` with an empty
/// schema made them `unknown`), and no schema `default` (generators make a field with one required,
/// or fill it in): a default is said in the description.
#[tokio::test]
async fn generated_clients_get_typed_items_and_no_required_default() {
    fn walk(value: &serde_json::Value, path: &str, found: &mut Vec<String>) {
        match value {
            serde_json::Value::Object(map) => {
                for (key, inner) in map {
                    let here = format!("{path}/{key}");
                    let untyped = |v: &serde_json::Value| v.as_object().is_some_and(|o| o.is_empty());
                    if (key == "anyOf" || key == "oneOf") && inner.as_array().is_some_and(|a| a.iter().any(untyped)) {
                        found.push(here.clone());
                    }
                    if key == "default" && path.contains("/properties/") {
                        found.push(here.clone());
                    }
                    walk(inner, &here, found);
                }
            }
            serde_json::Value::Array(items) => {
                for (i, inner) in items.iter().enumerate() {
                    walk(inner, &format!("{path}/{i}"), found);
                }
            }
            _ => {}
        }
    }
    let app = TestApp::spawn().await;
    let doc = read(app.request(Method::GET, "/openapi.json")).await.body;
    let mut found = Vec::new();
    walk(&doc["components"]["schemas"], "", &mut found);
    assert!(found.is_empty(), "untyped items or defaults: {found:?}");
    let schemas = &doc["components"]["schemas"];
    for (item, input) in [
        ("LocationItem", "LocationInput"),
        ("UpdateItem", "UpdateInput"),
        ("NamingItem", "NamingInput"),
    ] {
        assert_eq!(schemas[item]["$ref"], format!("#/components/schemas/{input}"));
        let said = schemas[item]["description"].as_str().unwrap();
        assert!(said.contains("answered") && said.contains("result"), "{item}: {said}");
    }
    assert_eq!(
        schemas["CreateRequest"]["properties"]["locations"]["items"]["$ref"],
        "#/components/schemas/LocationItem"
    );
}

/// `docs/api.md` is rendered from the served document (`helpers::api_reference`): a field rule or
/// an answer changed in the document changes the page, or this fails.
#[tokio::test]
async fn the_committed_api_reference_is_the_documents() {
    let app = TestApp::spawn().await;
    let served = read(app.request(Method::GET, "/openapi.json")).await;
    let page = api_reference::render(&served.body);
    assert_committed(REFERENCE, &page, "docs/api.md");
    for must in [
        "### POST /v1/location/create",
        "### LocationInput",
        "| `address_tail` |",
        "### POST /v1/webhook/recover",
    ] {
        assert!(page.contains(must), "{must}");
    }
}

#[tokio::test]
async fn the_document_covers_both_operations_answers_and_every_code() {
    let app = TestApp::spawn().await;
    let doc = read(app.request(Method::GET, "/openapi.json")).await.body;
    assert_eq!(doc["openapi"], "3.1.0");
    for (path, examples) in [
        ("/v1/location/create", 2),
        ("/v1/categories/list", 1),
        ("/v1/location/list", 1),
    ] {
        let op = &doc["paths"][path]["post"];
        for status in ["200", "400", "401", "429", "500"] {
            assert!(op["responses"][status].is_object(), "{path} {status}");
        }
        let body = &op["requestBody"]["content"]["application/json"];
        let count = body["examples"]
            .as_object()
            .map_or(usize::from(body["example"].is_object()), |e| e.len());
        assert_eq!(count, examples, "{path}");
    }
    let schemas = &doc["components"]["schemas"];
    let words = |name: &str| -> Vec<String> {
        schemas[name]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(words("FieldCode").len(), 19);
    assert!(words("FieldCode").contains(&"STOREFRONT_RULE_VIOLATION".to_owned()));
    let codes = words("ErrorCode");
    for code in [
        "UNSUPPORTED_MEDIA_TYPE",
        "PAYLOAD_TOO_LARGE",
        "MALFORMED_JSON",
        "INVALID_REQUEST",
        "TOO_MANY_ITEMS",
        "INVALID_FILTER",
        "INVALID_PAGINATION",
        "INVALID_CURSOR",
        "UNAUTHENTICATED",
        "INVALID_API_KEY",
        "RATE_LIMITED",
        "INTERNAL",
        "NOT_FOUND",
        "METHOD_NOT_ALLOWED",
    ] {
        assert!(codes.contains(&code.to_owned()), "{code}");
    }
    assert_eq!(words("ErrorType").len(), 5);
    assert_eq!(doc["components"]["securitySchemes"]["bearer"]["scheme"], "bearer");
    assert_eq!(
        doc["security"],
        json!([{"bearer": []}]),
        "every operation needs the bearer key"
    );
    // Every field of SPEC §2.1 and §2.3.
    let fields = |name: &str| -> Vec<String> {
        schemas[name]["properties"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    assert_eq!(fields("LocationInput").len(), 18);
    assert_eq!(fields("Category").len(), 11);

    // The rules a client needs are in the document: every code is explained where it is listed,
    // and every field of a location and of a day's schedule says its rule and its codes.
    for name in ["FieldCode", "ErrorCode"] {
        let said = schemas[name]["description"].as_str().unwrap_or_default();
        for code in words(name) {
            assert!(said.contains(&format!("`{code}`")), "{name}'s description says {code}");
        }
    }
    for (schema, field, code) in [
        ("LocationInput", "address_tail", "INVALID_ADDRESS_FORMAT"),
        ("LocationInput", "latitude", "INVALID_LATITUDE"),
        ("LocationInput", "storage_period_days", "MAX_VALUE"),
        ("LocationInput", "payment_methods", "STOREFRONT_RULE_VIOLATION"),
        ("DayScheduleInput", "time_end", "INVALID_TIME_RANGE"),
        ("DatedDayInput", "date", "INVALID_FORMAT"),
    ] {
        let said = schemas[schema]["properties"][field]["description"]
            .as_str()
            .unwrap_or_default();
        assert!(said.contains(code), "{schema}.{field}: {said}");
    }
    for schema in ["LocationInput", "DayScheduleInput", "WorkingDayInput"] {
        for (field, property) in schemas[schema]["properties"].as_object().unwrap() {
            let said = property["description"].as_str().unwrap_or_default();
            assert!(!said.is_empty(), "{schema}.{field} says its rule");
        }
    }
    let input = schemas["LocationInput"]["description"].as_str().unwrap();
    for rule in [
        "CONDITIONALLY_REQUIRED",
        "SCHEMA_MISMATCH",
        "a POSTAMAT takes no `CASH`",
        "QUARANTINE",
    ] {
        assert!(input.contains(rule), "the location's description says {rule}");
    }
}

#[tokio::test]
async fn the_docs_page_is_served_from_the_binary() {
    let app = TestApp::spawn().await;
    let page = app.request(Method::GET, "/docs/").send().await.unwrap();
    assert_eq!(page.status(), 200);
    let html = page.text().await.unwrap();
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "the page loads nothing from elsewhere"
    );
    for asset in ["swagger-ui-bundle.js", "swagger-ui.css", "swagger-initializer.js"] {
        let response = app
            .request(Method::GET, &format!("/docs/{asset}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{asset}");
    }
    let init = app.get_text("/docs/swagger-initializer.js").await;
    assert!(init.contains("/openapi.json"));
}

#[tokio::test]
async fn metrics_count_requests_by_route_and_status_and_created_locations() {
    let app = TestApp::spawn().await;
    app.create(vec![
        warehouse(1),
        with(warehouse(1), "/merchant_location_id", Some(json!("near"))),
    ])
    .await;
    let _ = read(app.request(Method::GET, "/nowhere/at/all")).await;
    let text = app.get_text("/metrics").await;
    let has = |needle: &str| text.lines().any(|l| l.starts_with(needle));
    assert!(
        has("http_requests_total{route=\"/v1/location/create\",status=\"200\"}"),
        "{text}"
    );
    assert!(has("http_requests_total{route=\"unmatched\",status=\"404\"}"));
    assert!(has(
        "http_request_duration_seconds_bucket{route=\"/v1/location/create\",le=\"0.005\"}"
    ));
    assert!(has("locations_created_total{status=\"ACTIVE\"}"));
    assert!(has("locations_created_total{status=\"QUARANTINE\"}"));
}

#[tokio::test]
async fn pages_and_answers_carry_the_browser_security_headers_and_docs_keep_no_key() {
    let app = TestApp::spawn().await;
    let page = app.request(Method::GET, "/docs/").send().await.unwrap();
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"].to_str().unwrap().to_owned();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    assert!(csp.contains("default-src 'self'"), "{csp}");
    assert_eq!(page.headers()["x-content-type-options"], "nosniff");
    let answer = app.list(&serde_json::json!({})).await;
    assert_eq!(answer.headers["x-content-type-options"], "nosniff");
    assert_eq!(page.headers()["x-frame-options"], "DENY");
    let initializer = app.get_text("/docs/swagger-initializer.js").await;
    assert!(initializer.contains("persistAuthorization"), "{initializer}");
    assert!(
        !initializer.contains("\"persistAuthorization\": true")
            && !initializer.contains("\"persistAuthorization\":true"),
        "the page would keep the key in the browser: {initializer}"
    );
}
