//! Files compiled into the binary and served without authentication: the pickup-point widget's
//! (`widget`) and the merchant's console (`console`). Each is a path, a type and its bytes.

use axum::Router;
use axum::http::{HeaderName, HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

/// A file served as it is: its path, its type, and its bytes.
pub struct Asset {
    pub path: &'static str,
    pub content_type: &'static str,
    pub body: &'static str,
}

pub const HTML: &str = "text/html; charset=utf-8";
pub const JS: &str = "text/javascript; charset=utf-8";
pub const CSS: &str = "text/css; charset=utf-8";

impl Asset {
    /// The file at `path`, its type taken from its extension (`.html`, `.css`, else a script).
    pub const fn file(path: &'static str, body: &'static str) -> Asset {
        let content_type = if ends_with(path, ".html") {
            HTML
        } else if ends_with(path, ".css") {
            CSS
        } else {
            JS
        };
        Asset {
            path,
            content_type,
            body,
        }
    }

    /// Where it is served: a folder's `index.html` at the folder itself.
    fn route(&self) -> &'static str {
        match self.path.strip_suffix("index.html") {
            Some(folder) => folder,
            None => self.path,
        }
    }
}

const fn ends_with(text: &str, suffix: &str) -> bool {
    let (text, suffix) = (text.as_bytes(), suffix.as_bytes());
    if suffix.len() > text.len() {
        return false;
    }
    let mut i = 0;
    while i < suffix.len() {
        if text[text.len() - suffix.len() + i] != suffix[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// The files of one folder of `assets/`, compiled into the binary and served at
/// `/<folder>/<name>` (its `index.html` at `/<folder>/`): the one way the widget's and the
/// console's files are listed.
macro_rules! folder {
    ($folder:literal: $($name:literal),+ $(,)?) => {
        [$($crate::http::assets::Asset::file(
            concat!("/", $folder, "/", $name),
            include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/assets/", $folder, "/", $name)),
        )),+]
    };
}
pub(crate) use folder;

/// A browser may keep a file this long before asking again: a new release reaches pages within
/// five minutes.
const CACHE: &str = "public, max-age=300";

/// The routes of `assets` under `folder` (`/widget/`; `/widget` redirected to it). Files that
/// pages of other origins include say so (`cross_origin`).
pub fn routes<S: Clone + Send + Sync + 'static>(
    folder: &'static str,
    assets: &'static [Asset],
    cross_origin: bool,
) -> Router<S> {
    let bare = folder.trim_end_matches('/');
    let mut router = Router::new().route(bare, get(move || async move { Redirect::permanent(folder) }));
    for asset in assets {
        router = router.route(asset.route(), get(move || async move { serve(asset, cross_origin) }));
    }
    router
}

fn serve(asset: &'static Asset, cross_origin: bool) -> Response {
    let mut response = asset.body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(CACHE));
    if cross_origin {
        headers.insert(
            HeaderName::from_static("cross-origin-resource-policy"),
            HeaderValue::from_static("cross-origin"),
        );
    }
    response
}
