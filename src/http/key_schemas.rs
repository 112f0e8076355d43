//! The shapes of the key operations in the OpenAPI document (the answers are written by
//! `keys`' own serialiser; these describe them).

#![allow(dead_code)]

use serde::Deserialize;
use utoipa::ToSchema;

use super::schemas::PaginationRequest;

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KeyCreateRequest {
    /// What people call the key: 1 to 100 characters, on one line (no control characters).
    #[schema(min_length = 1, max_length = 100, pattern = r"^[^\u0000-\u001F\u007F-\u009F]*$")]
    label: String,
    /// The web origins whose pages may use the key (a request with another `Origin` is refused
    /// 403; one without `Origin` is served): 1 to 10, each `https://host[:port]` (or `http://` for
    /// `localhost` and `127.0.0.1`), lower case, no path, no default port (`:443`, `:80`: a browser
    /// leaves it out). Null or absent: any origin the service allows.
    #[schema(min_items = 1, max_items = 10)]
    allowed_origins: Option<Vec<OriginText>>,
}

/// A web origin as browsers send it in `Origin` (a port other than the scheme's default).
#[derive(Deserialize, ToSchema)]
#[schema(
    value_type = String,
    max_length = 267,
    pattern = r"^(https://[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{3}|[1-35-9][0-9]{2}|4[0-35-9][0-9]|44[0-24-9]|[1-9][0-9]?))?|http://(localhost|127\.0\.0\.1)(:(6553[0-5]|655[0-2][0-9]|65[0-4][0-9]{2}|6[0-4][0-9]{3}|[1-5][0-9]{4}|[1-9][0-9]{3}|[1-9][0-9]{2}|[1-79][0-9]|8[1-9]|[1-9]))?)$"
)]
pub struct OriginText(String);

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KeysRequest {
    /// `limit` 1..1000 (default 100).
    pagination: Option<PaginationRequest>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KeyIdRequest {
    /// A storefront key's id, as `/v1/key/list` gives it.
    key_id: String,
}

#[derive(ToSchema)]
#[schema(as = KeyScope)]
pub enum KeyScopeSchema {
    #[schema(rename = "full")]
    Full,
    #[schema(rename = "storefront")]
    Storefront,
}

/// A key of the merchant, never the key itself. Keys issued by the service's operator have
/// `label` and `allowed_origins` null.
#[derive(ToSchema)]
#[schema(as = Key)]
pub struct KeyObjectSchema {
    key_id: String,
    scope: KeyScopeSchema,
    label: Option<String>,
    allowed_origins: Option<Vec<String>>,
    #[schema(format = DateTime)]
    created_at: String,
    /// When it was revoked; null while it is valid.
    #[schema(format = DateTime)]
    revoked_at: Option<String>,
}
