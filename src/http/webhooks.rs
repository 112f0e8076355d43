//! `POST /v1/webhook/create`, `list`, `delete`, `enable`, `rotate_secret`, `deliveries`: a
//! merchant's endpoints and what was delivered to them. Full keys only.

use axum::Json;
use axum::extract::State;
use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::error::{ApiError, ErrorCode};
use super::events::parse_types;
use super::extract::{JsonBody, invalid, object};
use super::gate::Merchant;
use super::paging::{
    PageSize, cursor_position, filter_value, invalid_filter, paged, parse_pagination, reject_unknown_filter_keys,
    section,
};
use crate::domain::webhook::{Attempt, MAX_WEBHOOKS, Outcome, ROTATION_OVERLAP, Webhook, WebhookStatus};
use crate::pagination::BeforeAttempt;
use crate::state::AppState;
use crate::store::MerchantRef;
use crate::store::ReadOn;
use crate::store::webhook_api::{AttemptFilter, AttemptsQuery};
use crate::store::webhook_api::{NewWebhook, WebhookChange};
use crate::webhooks::address::check_url;
use crate::webhooks::sign::new_secret;

/// The page sizes of an endpoint's attempts.
const ATTEMPTS_PAGE: PageSize = PageSize {
    default: 100,
    max: 1000,
};

/// `webhook_id`: a string (`INVALID_REQUEST` otherwise).
pub(super) fn webhook_id(body: &Map<String, Value>) -> Result<String, ApiError> {
    body.get("webhook_id")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| invalid("webhook_id", "webhook_id is required: the id of one of your webhooks"))
}

pub(super) fn not_found() -> ApiError {
    ApiError::unknown_id("webhook_id", "no webhook of this merchant has this webhook_id")
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct WebhookAnswer {
    #[schema(value_type = crate::http::event_schemas::WebhookObject)]
    webhook: Webhook,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct WebhookWithSecret {
    #[schema(value_type = crate::http::event_schemas::WebhookObject)]
    webhook: Webhook,
    /// `whsec_` and the base64 of 32 random bytes: shown only in this answer.
    secret: String,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct WebhookList {
    #[schema(value_type = Vec<crate::http::event_schemas::WebhookObject>)]
    webhooks: Vec<Webhook>,
}

/// Registers an HTTPS endpoint that receives the merchant's events as they happen.
///
/// Each event of a type it takes (`types`; null: every type) is sent as `POST url` with the event
/// as its body and the Standard Webhooks headers (`webhook-id`, `webhook-timestamp`,
/// `webhook-signature`, signed with the secret answered here, once). A failed attempt is retried
/// for three days; at least once, in no promised order. At most 10 endpoints.
#[utoipa::path(
    post,
    path = "/v1/webhook/create",
    tag = "webhooks",
    operation_id = "createWebhook",
    request_body(content = crate::http::event_schemas::WebhookCreateRequest, content_type = "application/json",
        example = json!({"url": "https://shop.example/hooks/storefront", "types": ["location.approved", "location.redecided"]})),
    responses(
        (status = 200, description = "The endpoint, and its secret (shown only here)", body = WebhookWithSecret),
        (status = 400, description = "INVALID_REQUEST, TOO_MANY_ITEMS",
         body = crate::http::schemas::ErrorBody)
    )
)]
pub async fn create(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    body: JsonBody,
) -> Result<Json<WebhookWithSecret>, ApiError> {
    let body = object(body.parse()?, &["url", "types"])?;
    let url = body
        .get("url")
        .and_then(Value::as_str)
        .ok_or_else(|| invalid("url", "url is required: the https:// URL of your endpoint"))?;
    let url = check_url(url, state.settings.webhooks.reach).map_err(|m| invalid("url", m))?;
    let types = parse_types(body.get("types"), |m| invalid("types", format!("types {m}")))?;
    let secret = new_secret().map_err(|e| ApiError::internal(&e))?;
    let new = NewWebhook {
        webhook: Webhook {
            webhook_id: uuid::Uuid::now_v7().to_string(),
            url: url.to_string(),
            types,
            status: WebhookStatus::Enabled,
            disabled_reason: None,
            created_at_ms: crate::store::now_ms(),
        },
        secret: crate::secret::Secret::new(secret.clone()),
    };
    match state.store.webhooks().create_webhook(merchant.pk, new).await? {
        Some(webhook) => Ok(Json(WebhookWithSecret { webhook, secret })),
        None => Err(ApiError::new(
            ErrorCode::TooManyItems,
            format!("at most {MAX_WEBHOOKS} webhooks: delete one first"),
        )
        .field("url")
        .detail("max", MAX_WEBHOOKS)),
    }
}

/// The merchant's endpoints, oldest first (never a secret).
#[utoipa::path(
    post, path = "/v1/webhook/list", tag = "webhooks", operation_id = "listWebhooks",
    request_body(content = crate::http::event_schemas::EmptyRequest, description = "Optional: an empty body means `{}`",
        content_type = "application/json", example = json!({})),
    responses(
        (status = 200, description = "The endpoints, oldest first", body = WebhookList),
        (status = 400, description = "INVALID_REQUEST",
         body = crate::http::schemas::ErrorBody)
    )
)]
pub async fn list(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    body: JsonBody,
) -> Result<Json<WebhookList>, ApiError> {
    object(body.parse()?, &[])?;
    let webhooks = state.store.webhooks().list_webhooks(merchant.pk).await?;
    Ok(Json(WebhookList { webhooks }))
}

/// Applies `change` to the endpoint the body names.
async fn change(
    state: &AppState,
    merchant: &MerchantRef,
    body: JsonBody,
    change: WebhookChange,
) -> Result<Webhook, ApiError> {
    let body = object(body.parse()?, &["webhook_id"])?;
    let id = webhook_id(&body)?;
    state
        .store
        .webhooks()
        .change_webhook(merchant.pk, &id, change)
        .await?
        .ok_or_else(not_found)
}

/// Declares an operation on one endpoint named by `webhook_id`.
macro_rules! endpoint_operation {
    ($(#[doc = $doc:literal])* $name:ident, $path:literal, $id:literal, $change:expr) => {
        $(#[doc = $doc])*
        #[utoipa::path(
            post, path = $path, tag = "webhooks", operation_id = $id,
            request_body(content = crate::http::event_schemas::WebhookIdRequest, content_type = "application/json",
                example = json!({"webhook_id": "019ab5b2-7c1e-7d3a-9f1e-2c4d5e6f7a8b"})),
            responses(
                (status = 200, description = "The endpoint", body = WebhookAnswer),
                (status = 400, description = "INVALID_REQUEST, NOT_FOUND (field webhook_id)",
                 body = crate::http::schemas::ErrorBody)
            )
        )]
        pub async fn $name(
            State(state): State<AppState>,
            Merchant(merchant): Merchant,
            body: JsonBody,
        ) -> Result<Json<WebhookAnswer>, ApiError> {
            let webhook = change(&state, &merchant, body, $change).await?;
            Ok(Json(WebhookAnswer { webhook }))
        }
    };
}

endpoint_operation!(
    /// Deletes an endpoint: nothing more is delivered to it. Answers it as it was.
    delete, "/v1/webhook/delete", "deleteWebhook", WebhookChange::Delete
);

endpoint_operation!(
    /// Enables a disabled endpoint again. Events appended while it was disabled are not sent:
    /// the feed has them.
    enable, "/v1/webhook/enable", "enableWebhook", WebhookChange::Enable
);

/// A new secret for an endpoint: for the next 24 hours every delivery carries two signatures
/// (the new secret's and the old one's), then only the new.
#[utoipa::path(
    post, path = "/v1/webhook/rotate_secret", tag = "webhooks", operation_id = "rotateWebhookSecret",
    request_body(content = crate::http::event_schemas::WebhookIdRequest, content_type = "application/json",
        example = json!({"webhook_id": "019ab5b2-7c1e-7d3a-9f1e-2c4d5e6f7a8b"})),
    responses(
        (status = 200, description = "The endpoint, and its new secret (shown only here)", body = WebhookWithSecret),
        (status = 400, description = "INVALID_REQUEST, NOT_FOUND (field webhook_id)",
         body = crate::http::schemas::ErrorBody)
    )
)]
pub async fn rotate_secret(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    body: JsonBody,
) -> Result<Json<WebhookWithSecret>, ApiError> {
    let secret = new_secret().map_err(|e| ApiError::internal(&e))?;
    let old_until_ms = crate::store::now_ms() + crate::store::api::millis(ROTATION_OVERLAP);
    let rotate = WebhookChange::Rotate {
        secret: crate::secret::Secret::new(secret.clone()),
        old_until_ms,
    };
    let webhook = change(&state, &merchant, body, rotate).await?;
    Ok(Json(WebhookWithSecret { webhook, secret }))
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct AttemptPage {
    #[schema(value_type = Vec<crate::http::event_schemas::AttemptObject>)]
    deliveries: Vec<Attempt>,
    #[schema(value_type = crate::http::event_schemas::AttemptPagination)]
    pagination: Value,
}

/// The digest an attempts cursor carries: the merchant, the endpoint and the filter (a cursor is
/// bound to the filter it was issued for). An unfiltered log's cursors are those
/// issued before the filter existed.
fn attempts_digest(merchant_id: &str, webhook_id: &str, filter: &AttemptFilter) -> [u8; 16] {
    let mut h = Sha256::new();
    h.update(b"attempts/v1\0");
    h.update(merchant_id.as_bytes());
    h.update([0]);
    h.update(webhook_id.as_bytes());
    if *filter != AttemptFilter::default() {
        h.update(b"\0filter\0");
        h.update(filter.outcome.map_or("", |o| o.as_str()).as_bytes());
        h.update([0]);
        h.update(filter.event_id.as_deref().unwrap_or("\0").as_bytes());
    }
    crate::domain::wire::digest16(h)
}

/// The deliveries log's `filter`: `outcome` (`delivered`, `failed` or null) and
/// `event_id` (a string or null); another key, or a value of another kind, `INVALID_FILTER`.
fn parse_attempt_filter(filter: Option<Map<String, Value>>) -> Result<AttemptFilter, ApiError> {
    let Some(filter) = filter else {
        return Ok(AttemptFilter::default());
    };
    reject_unknown_filter_keys(&filter, &["outcome", "event_id"])?;
    let outcome = filter_value(&filter, "outcome")
        .map(|v| {
            v.as_str().and_then(Outcome::from_wire).ok_or_else(|| {
                invalid_filter(
                    "filter.outcome",
                    "filter.outcome must be \"delivered\", \"failed\" or null",
                )
            })
        })
        .transpose()?;
    let event_id = filter_value(&filter, "event_id")
        .map(|v| {
            v.as_str()
                .map(str::to_owned)
                .ok_or_else(|| invalid_filter("filter.event_id", "filter.event_id must be a string or null"))
        })
        .transpose()?;
    Ok(AttemptFilter { outcome, event_id })
}

/// An endpoint's delivery attempts, newest first.
#[utoipa::path(
    post, path = "/v1/webhook/deliveries", tag = "webhooks", operation_id = "listWebhookDeliveries",
    request_body(content = crate::http::event_schemas::DeliveriesRequest, content_type = "application/json",
        example = json!({"webhook_id": "019ab5b2-7c1e-7d3a-9f1e-2c4d5e6f7a8b", "pagination": {"limit": 20}})),
    responses(
        (status = 200, description = "A page of the endpoint's attempts, newest first", body = AttemptPage),
        (status = 400, description = "INVALID_REQUEST, INVALID_PAGINATION, INVALID_CURSOR, NOT_FOUND (field webhook_id)",
         body = crate::http::schemas::ErrorBody)
    )
)]
pub async fn deliveries(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    body: JsonBody,
) -> Result<Json<AttemptPage>, ApiError> {
    let mut body = object(body.parse()?, &["webhook_id", "filter", "pagination"])?;
    let id = webhook_id(&body)?;
    let filter = parse_attempt_filter(section(&mut body, "filter")?)?;
    let (limit, cursor) = parse_pagination(section(&mut body, "pagination")?, ATTEMPTS_PAGE)?;
    let digest = attempts_digest(&merchant.id, &id, &filter);
    let before = cursor_position::<BeforeAttempt>(cursor.as_deref(), &state.cursors, &digest)?;
    let attempts = state
        .store
        .webhooks()
        .attempts(AttemptsQuery {
            merchant_pk: merchant.pk,
            webhook_id: id.clone(),
            before: before.map(|b| b.0),
            limit,
            filter,
        })
        .await?
        .ok_or_else(not_found)?;
    ReadOn::Primary.count();
    let (deliveries, pagination) = paged(attempts, limit, &state.cursors, &digest, |a| BeforeAttempt(a.id));
    Ok(Json(AttemptPage { deliveries, pagination }))
}
