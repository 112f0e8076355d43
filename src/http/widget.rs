//! The pickup-point widget (CONTRACT §13.3): its script and the page that shows it working,
//! compiled into the binary from `assets/widget/` and served without authentication. Nothing they
//! load comes from anywhere but this service.

use axum::Router;
use axum::http::{HeaderName, HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

/// A file of the widget: its path, its type, and its bytes.
struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static str,
}

const ASSETS: [Asset; 4] = [
    Asset {
        path: "/widget/",
        content_type: "text/html; charset=utf-8",
        body: include_str!("../../assets/widget/index.html"),
    },
    Asset {
        path: "/widget/pickup.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("../../assets/widget/pickup.js"),
    },
    Asset {
        path: "/widget/demo.js",
        content_type: "text/javascript; charset=utf-8",
        body: include_str!("../../assets/widget/demo.js"),
    },
    Asset {
        path: "/widget/demo.css",
        content_type: "text/css; charset=utf-8",
        body: include_str!("../../assets/widget/demo.css"),
    },
];

/// A browser may keep a file this long before asking again: a new release reaches pages within
/// five minutes.
const CACHE: &str = "public, max-age=300";

/// The routes of the widget's files (and `/widget`, redirected to `/widget/`).
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    let mut router = Router::new().route("/widget", get(|| async { Redirect::permanent("/widget/") }));
    for asset in &ASSETS {
        router = router.route(asset.path, get(move || async move { serve(asset) }));
    }
    router
}

fn serve(asset: &'static Asset) -> Response {
    let mut response = asset.body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(asset.content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(CACHE));
    // The script is included by shops' pages on other origins, also by those that require it.
    headers.insert(
        HeaderName::from_static("cross-origin-resource-policy"),
        HeaderValue::from_static("cross-origin"),
    );
    response
}
