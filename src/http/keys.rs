//! `POST /v1/key/create`, `list`, `revoke`: the storefront keys a merchant makes for its own web
//! pages, without the operator. Full keys only; the keys are the operator's kind (one table, one
//! check at the gate).

use std::time::Instant;

use axum::extract::State;
use axum::{Extension, Json};
use serde::Serialize;
use serde_json::{Map, Value};

use super::error::{ApiError, ErrorCode};
use super::extract::{JsonBody, invalid, object};
use super::gate::Merchant;
use super::paging::{MerchantPage, PageSize, paged};
use crate::auth::{self, KeyScope, KeySpec};
use crate::domain::key::{MAX_ORIGINS, MAX_STOREFRONT_KEYS, ORIGIN_FORM, is_key_origin, label_problem};
use crate::domain::wire::timestamp_text;
use crate::pagination::AfterKey;
use crate::state::{AppState, Deadline};
use crate::store::{KeyRow, MerchantKey, ReadOn, StoreError};

/// The page sizes of the key list.
const PAGE: PageSize = PageSize {
    default: 100,
    max: 1000,
};

#[derive(Serialize, utoipa::ToSchema)]
pub struct MadeKey {
    #[schema(value_type = super::key_schemas::KeyObjectSchema)]
    key: KeyOut,
    /// The key itself: shown only in this answer.
    api_key: String,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct KeyAnswer {
    #[schema(value_type = super::key_schemas::KeyObjectSchema)]
    key: KeyOut,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct KeyList {
    #[schema(value_type = Vec<super::key_schemas::KeyObjectSchema>)]
    keys: Vec<KeyOut>,
    #[schema(value_type = super::schemas::PaginationResponse)]
    pagination: Value,
}

/// A stored key as the answers write it, never its secret: `key_id`, `scope`, `label`,
/// `allowed_origins`, `created_at`, `revoked_at`.
struct KeyOut(KeyRow);

impl Serialize for KeyOut {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let k = &self.0;
        let mut o = s.serialize_struct("Key", 6)?;
        o.serialize_field("key_id", &k.key_id)?;
        o.serialize_field("scope", k.scope.as_str())?;
        o.serialize_field("label", &k.label)?;
        o.serialize_field("allowed_origins", &k.allowed_origins)?;
        o.serialize_field("created_at", &timestamp_text(k.created_at_ms))?;
        o.serialize_field("revoked_at", &k.revoked_at_ms.map(timestamp_text))?;
        o.end()
    }
}

/// `label`: 1 to 100 characters.
fn label(body: &Map<String, Value>) -> Result<String, ApiError> {
    match body.get("label") {
        Some(Value::String(label)) => match label_problem(label) {
            None => Ok(label.clone()),
            Some(problem) => Err(invalid("label", problem)),
        },
        _ => Err(invalid(
            "label",
            "label is required: a string of 1 to 100 characters that names the key",
        )),
    }
}

/// `allowed_origins`: null or absent, or 1 to 10 origins as browsers send them.
fn allowed_origins(body: &Map<String, Value>) -> Result<Option<Vec<String>>, ApiError> {
    let items = match body.get("allowed_origins") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Array(items)) if (1..=MAX_ORIGINS).contains(&items.len()) => items,
        Some(_) => {
            return Err(invalid(
                "allowed_origins",
                format!("allowed_origins must be null (any origin the service allows) or 1 to {MAX_ORIGINS} origins"),
            ));
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| match item {
            Value::String(origin) if is_key_origin(origin) => Ok(origin.clone()),
            _ => Err(invalid(&format!("allowed_origins[{i}]"), ORIGIN_FORM)),
        })
        .collect::<Result<_, _>>()
        .map(Some)
}

/// Makes a storefront key for the merchant's web pages.
///
/// The key itself is in this answer only. With `allowed_origins`, a request made with it from a
/// page of another origin is refused 403; every origin a key not revoked names may call the
/// service from a browser. A merchant has at most 20 storefront keys not revoked.
#[utoipa::path(
    post, path = "/v1/key/create", tag = "keys", operation_id = "createKey",
    request_body(content = super::key_schemas::KeyCreateRequest, content_type = "application/json",
        example = json!({"label": "Main shop", "allowed_origins": ["https://shop.example"]})),
    responses(
        (status = 200, description = "The new storefront key, and the key itself (shown once)", body = MadeKey),
        (status = 400, description = "INVALID_REQUEST (at label, allowed_origins or allowed_origins[i]), TOO_MANY_ITEMS (field label: 20 storefront keys not revoked)",
         body = super::schemas::ErrorBody)
    )
)]
pub async fn create(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    body: JsonBody,
) -> Result<Json<MadeKey>, ApiError> {
    let body = object(body.parse()?, &["label", "allowed_origins"])?;
    let spec = KeySpec {
        scope: KeyScope::Storefront,
        label: Some(label(&body)?),
        allowed_origins: allowed_origins(&body)?,
        storefront_below: Some(MAX_STOREFRONT_KEYS),
    };
    let (issued, row) = auth::make_key(state.store.as_ref(), &merchant.id, spec)
        .await?
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::TooManyItems,
                format!("this merchant has {MAX_STOREFRONT_KEYS} storefront keys not revoked; revoke one first"),
            )
            .field("label")
        })?;
    Ok(Json(MadeKey {
        key: KeyOut(row),
        api_key: issued.api_key,
    }))
}

/// The merchant's keys, full and storefront, revoked ones too, oldest first; never a key itself.
#[utoipa::path(
    post, path = "/v1/key/list", tag = "keys", operation_id = "listKeys",
    request_body(content = super::key_schemas::KeysRequest, description = "Optional: an empty body means `{}`",
        content_type = "application/json", example = json!({"pagination": {"limit": 20}})),
    responses(
        (status = 200, description = "A page of the merchant's keys, oldest first", body = KeyList),
        (status = 400, description = "INVALID_REQUEST, INVALID_PAGINATION, INVALID_CURSOR",
         body = super::schemas::ErrorBody)
    )
)]
pub async fn list(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    body: JsonBody,
) -> Result<Json<KeyList>, ApiError> {
    let page = MerchantPage::<AfterKey>::parse(body.parse()?, PAGE, b"keys/v1", &merchant.id, &state.cursors)?;
    let keys = state
        .store
        .key_page(merchant.pk, page.after.map(|a| (a.0, a.1)), page.limit + 1)
        .await?;
    ReadOn::Primary.count();
    let (keys, pagination) = paged(keys, page.limit, &state.cursors, &page.digest, |k| {
        AfterKey(k.created_at_ms, k.key_id.clone())
    });
    Ok(Json(KeyList {
        keys: keys.into_iter().map(KeyOut).collect(),
        pagination,
    }))
}

/// Revokes one of the merchant's storefront keys: refused from the next request on, on every
/// instance. A revoked key is answered as it is; full keys are revoked by the service's operator.
#[utoipa::path(
    post, path = "/v1/key/revoke", tag = "keys", operation_id = "revokeKey",
    request_body(content = super::key_schemas::KeyIdRequest, content_type = "application/json",
        example = json!({"key_id": "3f2a9c0d1e4b5a6978c0d1e2"})),
    responses(
        (status = 200, description = "The key, revoked", body = KeyAnswer),
        (status = 400, description = "INVALID_REQUEST (field key_id: absent, not a string, or a full key), NOT_FOUND (field key_id)",
         body = super::schemas::ErrorBody)
    )
)]
pub async fn revoke(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    Extension(Deadline(deadline)): Extension<Deadline>,
    body: JsonBody,
) -> Result<Json<KeyAnswer>, ApiError> {
    let body = object(body.parse()?, &["key_id"])?;
    let Some(Value::String(key_id)) = body.get("key_id") else {
        return Err(invalid(
            "key_id",
            "key_id is required: the id of one of your storefront keys, as /v1/key/list gives it",
        ));
    };
    // A revocation is answered a moment after its commit (until every instance refuses the key):
    // begun after the deadline, its answer could come after the request's time is up.
    if Instant::now() >= deadline {
        return Err(StoreError::DeadlinePassed.into());
    }
    match state.store.revoke_merchant_key(merchant.pk, key_id).await? {
        MerchantKey::Revoked(key) => Ok(Json(KeyAnswer { key: KeyOut(key) })),
        MerchantKey::Full => Err(invalid(
            "key_id",
            "this is a full key: full keys are revoked by the service's operator (storefront key revoke)",
        )),
        MerchantKey::NotFound => Err(ApiError::unknown_id(
            "key_id",
            "no key of this merchant has this key_id",
        )),
    }
}
