//! The OpenAPI 3.1 document, generated from the code by `utoipa`: the operations
//! of the handlers, the shapes of `schemas`, and what every operation shares.
//!
//! Every enumeration on the wire (field and request-level codes, statuses, location enums) takes
//! its schema from the same `wire_enum!` declaration the code uses. `openapi.json` at the
//! repository root is a committed copy; a test fails when it is out of date.

use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ObjectBuilder, RefOr};
use utoipa::{Modify, OpenApi};

use super::categories as list;
use super::changes::{self, ChangeResponse};
use super::event_schemas::*;
use super::import_schemas::*;
use super::key_schemas::*;
use super::locations as create;
use super::schemas::*;
use super::search;
use super::search_schemas::*;
use super::{events, imports, keys, redelivery, webhooks};
use crate::domain::category::{Category, CategoryStatus};
use crate::domain::event::EventType;
use crate::domain::field_error::{FieldCode, FieldError};
use crate::domain::location::Status;
use crate::domain::location::batch::ItemResult;
use crate::domain::location::change::ChangeResult;
use crate::domain::webhook::{Outcome, Trigger};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "Storefront Catalog Service",
        description = "A merchant's delivery locations (warehouses, pickup points, click-and-collect points): \
                       created, updated, archived and restored in batches of up to 200 with a result for \
                       every item and every field; listed by cursor; searched by distance for a storefront's \
                       buyers. The product category taxonomy, flat, filtered and paged. Every change as an \
                       event: a feed to read, and webhooks to receive (signed, retried, resent and recovered \
                       on request). Every operation is a POST with a JSON body and an API key \
                       (`Authorization: Bearer`); a storefront key may only search and list categories.",
        version = "1.0.0"
    ),
    paths(
        create::create, create::list, search::search, changes::update, changes::archive, changes::restore, list::list,
        events::feed, webhooks::create, webhooks::list, webhooks::delete, webhooks::enable, webhooks::rotate_secret,
        webhooks::deliveries, redelivery::resend, redelivery::recover, redelivery::test, imports::create, imports::get,
        imports::list, imports::rows, keys::create, keys::list, keys::revoke
    ),
    components(schemas(
        ErrorBody, FieldCode, FieldError, ItemResult, Status, LocationInput, LocationItem, LimitsInput,
        WorkingDayInput, DatedDayInput, DayScheduleInput, Category, CategoryStatus, ListFilter,
        PaginationRequest, PaginationResponse, LocationListFilter, LocationRecord, ChangeResult, ChangeResponse,
        UpdateInput, UpdateItem, NamingInput, NamingItem, NearInput, ParcelInput, SearchFilter, SearchPagination,
        SearchResult, SearchPaginationResponse, EventType, EventFilter, FeedStart, EventFeedRequest, Event,
        FeedPagination, EventFeedResponse, EmptyRequest, WebhookObject, WebhookCreateRequest, WebhookIdRequest, DeliveriesRequest,
        AttemptObject, AttemptPagination, webhooks::WebhookAnswer, webhooks::WebhookWithSecret, webhooks::WebhookList,
        webhooks::AttemptPage, AttemptFilterInput, ResendRequest, RecoverRequest, TestEvent, Outcome, Trigger,
        redelivery::DeliveryAnswer, redelivery::RecoverAnswer, ImportCreateRequest, ImportIdRequest, ImportsRequest,
        ImportRowsRequest, ImportRowsFilter, ImportStatusSchema, ImportCounts, ImportErrorObject, ImportObject,
        RowErrorObject, ImportRowObject, imports::ImportAnswer, imports::ImportList, imports::ImportRowsPage,
        KeyCreateRequest, OriginText, KeysRequest, KeyIdRequest, KeyScopeSchema, KeyObjectSchema, keys::MadeKey,
        keys::KeyAnswer, keys::KeyList
    )),
    modifiers(&BearerAuth, &CommonAnswers),
    security(("bearer" = [])),
    tags(
        (name = "locations", description = "Delivery locations of the authenticated merchant"),
        (name = "categories", description = "The shared product category taxonomy"),
        (name = "events", description = "What changed in the merchant's locations: the ordered event feed"),
        (name = "webhooks", description = "The same events pushed to the merchant's own HTTPS endpoints, signed"),
        (name = "imports", description = "A merchant's file of locations handed to the service, applied in the background exactly once, and followed row by row"),
        (name = "keys", description = "The merchant's keys, and the storefront keys it makes for its own web pages")
    )
)]
pub struct ApiDoc;

/// What every `/v1` operation answers besides its own 200 and 400:
/// the headers of a 200, and 401, 408, 429 and 500 in the error body, 403 for the operations a
/// storefront key may not call, and 503 for the operations that write. Written here once for
/// every operation.
struct CommonAnswers;

/// What every operation's body can get wrong, before its own rules.
const MALFORMED: &str = "Malformed request: UNSUPPORTED_MEDIA_TYPE, PAYLOAD_TOO_LARGE, MALFORMED_JSON";

/// The operations that store: their answer may be 503 `OUTCOME_UNKNOWN`.
const WRITES: [&str; 4] = [
    "/v1/location/create",
    "/v1/location/update",
    "/v1/location/archive",
    "/v1/location/restore",
];

impl Modify for CommonAnswers {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::header::HeaderBuilder;
        use utoipa::openapi::{ContentBuilder, Ref, ResponseBuilder};
        let header = |description: &str| {
            HeaderBuilder::new()
                .schema(Some(
                    ObjectBuilder::new().schema_type(utoipa::openapi::schema::Type::String),
                ))
                .description(Some(description))
                .build()
        };
        let error = |description: &str| {
            ResponseBuilder::new().description(description).content(
                "application/json",
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("ErrorBody")))
                    .build(),
            )
        };
        let retry_after = HeaderBuilder::new()
            .schema(Some(
                ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::Integer)
                    .minimum(Some(1)),
            ))
            .description(Some("Seconds to wait, rounded up"))
            .build();
        for (path, item) in openapi.paths.paths.iter_mut() {
            let Some(op) = item.post.as_mut().filter(|_| path.starts_with("/v1/")) else {
                continue;
            };
            let answers = &mut op.responses.responses;
            if let Some(RefOr::T(ok)) = answers.get_mut("200") {
                ok.headers.insert(
                    "X-Request-Id".into(),
                    header("The request's id, also in the logs").into(),
                );
                ok.headers.insert(
                    "RateLimit-Policy".into(),
                    header("\"merchant\" (or \"storefront\" for a storefront key);q=<burst>;w=<seconds to refill it>, while limiting is on").into(),
                );
                ok.headers.insert(
                    "RateLimit".into(),
                    header("\"merchant\" (or \"storefront\");r=<units left>;t=<seconds until one more>, while limiting is on").into(),
                );
            }
            // Every operation's 400 starts with what any body can get wrong; each says the rest.
            if let Some(RefOr::T(malformed)) = answers.get_mut("400") {
                malformed.description = format!("{MALFORMED}, {}", malformed.description);
            }
            answers.insert("401".into(), error("UNAUTHENTICATED or INVALID_API_KEY").build().into());
            let forbidden = if super::gate::STOREFRONT_ROUTES.contains(&path.as_str()) {
                "FORBIDDEN: a storefront key whose allowed_origins do not name the request's Origin; nothing is read and no budget is spent"
            } else {
                "FORBIDDEN: a storefront key, which may call /v1/location/search and /v1/categories/list only; nothing is read or changed and no budget is spent"
            };
            answers.insert("403".into(), error(forbidden).build().into());
            answers.insert(
                "408".into(),
                error("REQUEST_TIMEOUT: the body stopped arriving for 10 s, or was not complete within the request's 30 s; nothing is stored")
                    .build()
                    .into(),
            );
            if WRITES.contains(&path.as_str()) {
                answers.insert(
                    "503".into(),
                    error("OUTCOME_UNKNOWN: the connection to the database broke while the write was committing, so the server cannot tell whether it was stored; retry it safely (by merchant_location_id or expected_version)")
                        .build()
                        .into(),
                );
            }
            // Every operation's 429 starts with the budgets; an operation that refuses for a
            // reason of its own says it after them.
            let budgets = "RATE_LIMITED: the merchant's budget (policy \"merchant\"), its storefront keys' budget (policy \"storefront\"), or the client address's budget of 401s (policy \"unauthenticated\")";
            let limited = match answers.get("429") {
                Some(RefOr::T(own)) => format!("{budgets}; {}", own.description.trim_start_matches("RATE_LIMITED: ")),
                _ => budgets.to_owned(),
            };
            answers.insert(
                "429".into(),
                error(&limited)
                    .header("Retry-After", retry_after.clone())
                    .build()
                    .into(),
            );
            answers.insert(
                "500".into(),
                error("INTERNAL; nothing of the request is stored").build().into(),
            );
        }
    }
}

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "Authorization: Bearer <api_key>; keys are issued with `storefront merchant create` and \
                         `storefront key issue --merchant ID [--scope storefront]`, and storefront keys by the \
                         merchant with /v1/key/create. A storefront key may be published in a web page: it may \
                         call /v1/location/search and /v1/categories/list only.",
                    ))
                    .build(),
            ),
        );
    }
}

/// The document, as served at `/openapi.json` and committed as `openapi.json`.
pub fn document() -> serde_json::Value {
    let mut doc = ApiDoc::openapi();
    // A list body may be left out (an empty body is `{}`), but it is not nullable:
    // utoipa would express "optional" only as `Option`, which also means `null`.
    for path in [
        "/v1/categories/list",
        "/v1/location/list",
        "/v1/location/events",
        "/v1/webhook/list",
        "/v1/import/list",
        "/v1/key/list",
    ] {
        if let Some(RefOr::T(body)) = doc
            .paths
            .paths
            .get_mut(path)
            .and_then(|item| item.post.as_mut())
            .and_then(|op| op.request_body.as_mut())
        {
            body.required = Some(utoipa::openapi::Required::False);
        }
    }
    let mut value = with_limits(&doc);
    super::rules_doc::describe(&mut value);
    if let Some(root) = value.as_object_mut() {
        root.insert("webhooks".to_owned(), received());
    }
    value
}

/// The top-level `webhooks` of OpenAPI 3.1: what a merchant's endpoint receives (events and
/// test events), so that a receiver's types can be generated from the document too.
fn received() -> serde_json::Value {
    use serde_json::json;
    let header = |name: &str, description: &str| {
        json!({"name": name, "in": "header", "required": true, "description": description,
               "schema": {"type": "string"}})
    };
    let headers = json!([
        header(
            "webhook-id",
            "The event's event_id: the same for every attempt of it (deduplicate by it)."
        ),
        header("webhook-timestamp", "The attempt's Unix time in seconds."),
        header(
            "webhook-signature",
            "`v1,` and the base64 of the HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` keyed with \
             the secret's bytes (the base64 after `whsec_`); two such signatures separated by a space for 24 \
             hours after a rotation. Verify with a Standard Webhooks library."
        ),
    ]);
    let responses = json!({
        "2XX": {"description": "Received: answered within 15 s, the event is delivered."},
        "410": {"description": "Gone: the endpoint is disabled at once."},
        "default": {"description": "Any other answer (or none within 15 s) fails the attempt: it is retried on the \
                                    schedule (at least a 429's or 503's Retry-After)."}
    });
    let operation = |id: &str, summary: &str, schema: &str| {
        json!({"post": {
            "operationId": id, "summary": summary, "tags": ["webhooks"], "security": [],
            "parameters": headers.clone(),
            "requestBody": {"required": true, "content": {"application/json":
                {"schema": {"$ref": format!("#/components/schemas/{schema}")}}}},
            "responses": responses.clone()
        }})
    };
    json!({
        "locationEvent": operation(
            "receiveLocationEvent",
            "An event of the merchant's locations, sent to each enabled endpoint that takes its type",
            "Event"
        ),
        "webhookTest": operation(
            "receiveTestEvent",
            "A test event, sent by POST /v1/webhook/test",
            "TestEvent"
        )
    })
}

/// The document with every limit the code checks written into the request schemas, from the
/// constants the checks use (the documentation types carry none of their own).
fn with_limits(doc: &utoipa::openapi::OpenApi) -> serde_json::Value {
    use crate::domain::location::schema::limits;
    use serde_json::{Value, json};
    let Ok(mut value) = serde_json::to_value(doc) else {
        return Value::Null;
    };
    let number = |n: f64| if n.fract() == 0.0 { json!(n as i64) } else { json!(n) };
    let mut set = |schema: &str, property: &str, key: &str, limit: Value| {
        if let Some(Value::Object(p)) =
            value.pointer_mut(&format!("/components/schemas/{schema}/properties/{property}"))
        {
            p.insert(key.to_owned(), limit);
        }
    };
    for (field, chars) in limits::TEXT {
        set("LocationInput", field, "maxLength", json!(chars));
    }
    set("LocationInput", "latitude", "minimum", number(-limits::LATITUDE));
    set("LocationInput", "latitude", "maximum", number(limits::LATITUDE));
    set("LocationInput", "longitude", "minimum", number(-limits::LONGITUDE));
    set("LocationInput", "longitude", "maximum", number(limits::LONGITUDE));
    set("LocationInput", "storage_period_days", "minimum", json!(1));
    set(
        "LocationInput",
        "storage_period_days",
        "maximum",
        json!(limits::STORAGE_DAYS),
    );
    set(
        "LocationInput",
        "working_schedule",
        "maxItems",
        json!(limits::WORKING_DAYS),
    );
    set(
        "LocationInput",
        "individual_schedule",
        "maxItems",
        json!(limits::INDIVIDUAL_DAYS),
    );
    for (measure, max) in [
        ("length", limits::DIMENSION_CM),
        ("width", limits::DIMENSION_CM),
        ("height", limits::DIMENSION_CM),
        ("weight", limits::WEIGHT_KG),
    ] {
        set("LimitsInput", measure, "exclusiveMinimum", json!(0));
        set("LimitsInput", measure, "maximum", number(max));
    }
    for request in ["CreateRequest", "UpdateRequest", "NamingRequest"] {
        set(request, "locations", "maxItems", json!(limits::ITEMS_PER_REQUEST));
    }
    set("ListFilter", "ids", "maxItems", json!(super::paging::MAX_IDS));
    set(
        "LocationListFilter",
        "location_ids",
        "maxItems",
        json!(super::paging::MAX_IDS),
    );
    set(
        "LocationListFilter",
        "merchant_location_ids",
        "maxItems",
        json!(super::paging::MAX_IDS),
    );
    set(
        "PaginationRequest",
        "cursor",
        "maxLength",
        json!(crate::pagination::MAX_CURSOR_CHARS),
    );
    value
}
