//! The pickup-point widget (CONTRACT §13.3): its script and the page that shows it working,
//! compiled into the binary from `assets/widget/` and served without authentication. Nothing they
//! load comes from anywhere but this service.

use axum::Router;

use super::assets::{Asset, CSS, HTML, JS};

const ASSETS: [Asset; 4] = [
    Asset {
        path: "/widget/",
        content_type: HTML,
        body: include_str!("../../assets/widget/index.html"),
    },
    Asset {
        path: "/widget/pickup.js",
        content_type: JS,
        body: include_str!("../../assets/widget/pickup.js"),
    },
    Asset {
        path: "/widget/demo.js",
        content_type: JS,
        body: include_str!("../../assets/widget/demo.js"),
    },
    Asset {
        path: "/widget/demo.css",
        content_type: CSS,
        body: include_str!("../../assets/widget/demo.css"),
    },
];

/// The routes of the widget's files (and `/widget`, redirected to `/widget/`). The script is
/// included by shops' pages on other origins, also by those that require it to say so.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    super::assets::routes("/widget/", &ASSETS, true)
}
