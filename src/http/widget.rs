//! The pickup-point widget: its script and the page that shows it working,
//! compiled into the binary from `assets/widget/` and served without authentication. Nothing they
//! load comes from anywhere but this service.

use axum::Router;

use super::assets::{Asset, folder};

const ASSETS: [Asset; 4] = folder!("widget": "index.html", "pickup.js", "demo.js", "demo.css");

/// The routes of the widget's files (and `/widget`, redirected to `/widget/`). The script is
/// included by shops' pages on other origins, also by those that require it to say so.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    super::assets::routes("/widget/", &ASSETS, true)
}
