//! `POST /v1/import/create`, `get`, `list`, `rows`: a merchant's file handed to the service, run
//! in the background (`crate::imports`) and followed to its end. Full keys only.

use axum::Json;
use axum::extract::State;
use base64::Engine;
use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::error::{ApiError, ErrorCode};
use super::extract::{ImportBody, JsonBody, invalid, object};
use super::gate::Merchant;
use super::import_schemas::{ImportIdRequest, ImportObject, ImportRowObject, ImportRowsRequest, ImportsRequest};
use super::paging::{
    MerchantPage, PageSize, cursor_position, filter_value, invalid_filter, paged, parse_pagination,
    reject_unknown_filter_keys, section,
};
use crate::client::table::rows::Format;
use crate::domain::import::{Import, ImportOptions, ImportRow, MAX_ACTIVE, MAX_FILE_BYTES};
use crate::domain::json;
use crate::pagination::{AfterRow, BeforeImport};
use crate::state::AppState;
use crate::store::ReadOn;
use crate::store::import_api::NewImport;

/// The page sizes of the import list and of an import's rows.
const PAGE: PageSize = PageSize {
    default: 100,
    max: 1000,
};

#[derive(Serialize, utoipa::ToSchema)]
pub struct ImportAnswer {
    #[schema(value_type = ImportObject)]
    import: Import,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct ImportList {
    #[schema(value_type = Vec<ImportObject>)]
    imports: Vec<Import>,
    #[schema(value_type = super::schemas::PaginationResponse)]
    pagination: Value,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct ImportRowsPage {
    #[schema(value_type = Vec<ImportRowObject>)]
    rows: Vec<ImportRow>,
    #[schema(value_type = super::schemas::PaginationResponse)]
    pagination: Value,
}

/// Standard base64 with its padding; the unused bits of the last character are not checked (an
/// encoder that leaves them set still means the same bytes).
const BASE64: base64::engine::GeneralPurpose = base64::engine::GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    base64::engine::GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
);

/// What `create` was asked, checked.
struct CreateRequest {
    file_name: String,
    content: Vec<u8>,
    options: ImportOptions,
}

/// `update`, `archive_missing`, `dry_run`: booleans, absent or null meaning false.
fn flag(body: &Map<String, Value>, key: &str) -> Result<bool, ApiError> {
    match body.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(invalid(key, format!("{key} must be true, false or null"))),
    }
}

/// The create request's rules, each refused at its field.
fn create_request(body: &Map<String, Value>) -> Result<CreateRequest, ApiError> {
    let file_name = match body.get("file_name") {
        Some(Value::String(name)) if !json::is_single_line(name) => {
            return Err(invalid(
                "file_name",
                "file_name must not contain control characters: it is the file's name, shown as it is",
            ));
        }
        Some(Value::String(name)) if Format::of_path(std::path::Path::new(name)).is_some() => name.clone(),
        Some(Value::String(_)) => {
            return Err(invalid(
                "file_name",
                "file_name must end in .csv, .xlsx, .jsonl, .ndjson or .json: the file's format is taken from it",
            ));
        }
        _ => {
            return Err(invalid(
                "file_name",
                "file_name is required: the file's name, with its extension",
            ));
        }
    };
    let Some(Value::String(encoded)) = body.get("content_base64") else {
        return Err(invalid(
            "content_base64",
            "content_base64 is required: the file's bytes in standard base64",
        ));
    };
    if encoded.is_empty() {
        return Err(invalid(
            "content_base64",
            "content_base64 is empty: the file has no bytes",
        ));
    }
    let too_large = || {
        invalid(
            "content_base64",
            format!("the file must be at most {MAX_FILE_BYTES} bytes once decoded"),
        )
    };
    // Four characters of base64 are three bytes: a longer text cannot decode to a file that fits.
    if encoded.len() > MAX_FILE_BYTES.div_ceil(3) * 4 {
        return Err(too_large());
    }
    let content = BASE64
        .decode(encoded)
        .map_err(|e| invalid("content_base64", format!("content_base64 is not standard base64: {e}")))?;
    if content.len() > MAX_FILE_BYTES {
        return Err(too_large());
    }
    let update = flag(body, "update")?;
    let archive_missing = flag(body, "archive_missing")?;
    let dry_run = flag(body, "dry_run")?;
    let sheet = match body.get("sheet") {
        None | Some(Value::Null) => None,
        Some(Value::String(sheet)) if json::is_single_line(sheet) => Some(sheet.clone()),
        Some(Value::String(_)) => {
            return Err(invalid(
                "sheet",
                "sheet must not contain control characters: no workbook names a sheet so",
            ));
        }
        Some(_) => return Err(invalid("sheet", "sheet must be a string (a workbook's sheet) or null")),
    };
    if archive_missing && !update {
        return Err(invalid(
            "archive_missing",
            "archive_missing needs update: true (the locations the file names are updated, the others archived)",
        ));
    }
    Ok(CreateRequest {
        file_name,
        content,
        options: ImportOptions {
            update,
            archive_missing,
            dry_run,
            sheet,
        },
    })
}

/// Hands the service a file of locations to apply as `locations push` would.
///
/// The file and a new `QUEUED` import are stored before the answer: a server stopped right after
/// it still runs the import. The format is taken from `file_name`'s extension. The import runs in
/// the background; follow it with `/v1/import/get` and read its rows with `/v1/import/rows`. A
/// merchant has at most 2 imports queued or running.
#[utoipa::path(
    post, path = "/v1/import/create", tag = "imports", operation_id = "createImport",
    request_body(content = super::import_schemas::ImportCreateRequest, content_type = "application/json",
        example = json!({"file_name": "locations.csv", "content_base64": "bWVyY2hhbnRfbG9jYXRpb25faWQsbmFtZQo=", "update": true, "dry_run": true})),
    responses(
        (status = 200, description = "The import, stored QUEUED with its file", body = ImportAnswer),
        (status = 400, description = "INVALID_REQUEST (at the field), TOO_MANY_ITEMS (field file_name: 2 imports queued or running already); here PAYLOAD_TOO_LARGE is a body over 9 MiB",
         body = super::schemas::ErrorBody)
    )
)]
pub async fn create(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    ImportBody(body): ImportBody,
) -> Result<Json<ImportAnswer>, ApiError> {
    // Parsing and decoding megabytes is work for a blocking thread, not for the ones serving requests.
    let request = tokio::task::spawn_blocking(move || {
        let parsed = object(body.parse()?, &KEYS)?;
        create_request(&parsed)
    })
    .await
    .map_err(|e| ApiError::internal(&e))??;
    let import = state
        .store
        .imports()
        .create_import(NewImport {
            merchant_pk: merchant.pk,
            import_id: uuid::Uuid::now_v7().to_string(),
            file_name: request.file_name,
            content: request.content,
            options: request.options,
            created_at_ms: crate::store::now_ms(),
        })
        .await?
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::TooManyItems,
                format!("{MAX_ACTIVE} imports are queued or running already; wait for one to end"),
            )
            .field("file_name")
        })?;
    state.imports_wake.notify_one();
    Ok(Json(ImportAnswer { import }))
}

const KEYS: [&str; 6] = [
    "file_name",
    "content_base64",
    "update",
    "archive_missing",
    "dry_run",
    "sheet",
];

/// `import_id`: a string.
fn import_id(body: &Map<String, Value>) -> Result<String, ApiError> {
    body.get("import_id")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| invalid("import_id", "import_id is required: the id of one of your imports"))
}

fn not_found() -> ApiError {
    ApiError::unknown_id("import_id", "no import of this merchant has this import_id")
}

/// One import: where it stands.
#[utoipa::path(
    post, path = "/v1/import/get", tag = "imports", operation_id = "getImport",
    request_body(content = ImportIdRequest, content_type = "application/json",
        example = json!({"import_id": "019ab5b2-7c1e-7d3a-9f1e-2c4d5e6f7a8b"})),
    responses(
        (status = 200, description = "The import", body = ImportAnswer),
        (status = 400, description = "INVALID_REQUEST, NOT_FOUND (field import_id)",
         body = super::schemas::ErrorBody)
    )
)]
pub async fn get(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    body: JsonBody,
) -> Result<Json<ImportAnswer>, ApiError> {
    let body = object(body.parse()?, &["import_id"])?;
    let id = import_id(&body)?;
    let import = state
        .store
        .imports()
        .get_import(merchant.pk, &id)
        .await?
        .ok_or_else(not_found)?;
    ReadOn::Primary.count();
    Ok(Json(ImportAnswer { import }))
}

/// The merchant's imports, newest first.
#[utoipa::path(
    post, path = "/v1/import/list", tag = "imports", operation_id = "listImports",
    request_body(content = ImportsRequest, description = "Optional: an empty body means `{}`",
        content_type = "application/json", example = json!({"pagination": {"limit": 20}})),
    responses(
        (status = 200, description = "A page of the merchant's imports, newest first", body = ImportList),
        (status = 400, description = "INVALID_REQUEST, INVALID_PAGINATION, INVALID_CURSOR",
         body = super::schemas::ErrorBody)
    )
)]
pub async fn list(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    body: JsonBody,
) -> Result<Json<ImportList>, ApiError> {
    let page = MerchantPage::<BeforeImport>::parse(body.parse()?, PAGE, b"imports/v1", &merchant.id, &state.cursors)?;
    let imports = state
        .store
        .imports()
        .list_imports(merchant.pk, page.after.map(|b| b.0), page.limit + 1)
        .await?;
    ReadOn::Primary.count();
    let (imports, pagination) = paged(imports, page.limit, &state.cursors, &page.digest, |(key, _)| {
        BeforeImport(*key)
    });
    Ok(Json(ImportList {
        imports: imports.into_iter().map(|(_, import)| import).collect(),
        pagination,
    }))
}

/// `filter` of `rows`: `outcome` `"failed"` or null; whether only failed rows are asked for.
fn failed_only(filter: Option<Map<String, Value>>) -> Result<bool, ApiError> {
    let Some(filter) = filter else {
        return Ok(false);
    };
    reject_unknown_filter_keys(&filter, &["outcome"])?;
    match filter_value(&filter, "outcome") {
        None => Ok(false),
        Some(Value::String(outcome)) if outcome == "failed" => Ok(true),
        Some(_) => Err(invalid_filter(
            "filter.outcome",
            "filter.outcome must be \"failed\" or null",
        )),
    }
}

fn rows_digest(merchant_id: &str, import_id: &str, failed_only: bool) -> [u8; 16] {
    let mut h = Sha256::new();
    h.update(b"import-rows/v1\0");
    h.update(merchant_id.as_bytes());
    h.update([0]);
    h.update(import_id.as_bytes());
    h.update([u8::from(failed_only)]);
    crate::domain::wire::digest16(h)
}

/// An import's rows in the file's order, each with its outcome and errors as push reports them;
/// a running import's rows as they end.
#[utoipa::path(
    post, path = "/v1/import/rows", tag = "imports", operation_id = "listImportRows",
    request_body(content = ImportRowsRequest, content_type = "application/json",
        example = json!({"import_id": "019ab5b2-7c1e-7d3a-9f1e-2c4d5e6f7a8b", "filter": {"outcome": "failed"}})),
    responses(
        (status = 200, description = "A page of the import's rows, in the file's order", body = ImportRowsPage),
        (status = 400, description = "INVALID_REQUEST, INVALID_FILTER, INVALID_PAGINATION, INVALID_CURSOR, NOT_FOUND (field import_id)",
         body = super::schemas::ErrorBody)
    )
)]
pub async fn rows(
    State(state): State<AppState>,
    Merchant(merchant): Merchant,
    body: JsonBody,
) -> Result<Json<ImportRowsPage>, ApiError> {
    let mut body = object(body.parse()?, &["import_id", "filter", "pagination"])?;
    let id = import_id(&body)?;
    let failed_only = failed_only(section(&mut body, "filter")?)?;
    let (limit, cursor) = parse_pagination(section(&mut body, "pagination")?, PAGE)?;
    let digest = rows_digest(&merchant.id, &id, failed_only);
    let after = cursor_position::<AfterRow>(cursor.as_deref(), &state.cursors, &digest)?;
    let rows = state
        .store
        .imports()
        .import_rows(merchant.pk, &id, failed_only, after.map_or(-1, |a| a.0), limit + 1)
        .await?
        .ok_or_else(not_found)?;
    ReadOn::Primary.count();
    let (rows, pagination) = paged(rows, limit, &state.cursors, &digest, |r| AfterRow(r.ordinal));
    Ok(Json(ImportRowsPage { rows, pagination }))
}
