//! The merchant's console (CONTRACT §21): a page and its modules, compiled into the binary from
//! `assets/console/` and served without authentication. It has no operation of its own: it signs in
//! with the merchant's key and does everything through the documented `/v1` API, in the merchant's
//! rate budget. Its answers carry the console's Content-Security-Policy (`app::security_headers`).

use axum::Router;

use super::assets::{Asset, CSS, HTML, JS};

macro_rules! module {
    ($name:literal) => {
        Asset {
            path: concat!("/console/", $name),
            content_type: JS,
            body: include_str!(concat!("../../assets/console/", $name)),
        }
    };
}

const ASSETS: [Asset; 12] = [
    Asset {
        path: "/console/",
        content_type: HTML,
        body: include_str!("../../assets/console/index.html"),
    },
    Asset {
        path: "/console/console.css",
        content_type: CSS,
        body: include_str!("../../assets/console/console.css"),
    },
    module!("app.js"),
    module!("api.js"),
    module!("dom.js"),
    module!("plan.js"),
    module!("locations.js"),
    module!("events.js"),
    module!("webhooks.js"),
    module!("imports.js"),
    module!("keys.js"),
    module!("form.js"),
];

/// The routes of the console's files (and `/console`, redirected to `/console/`).
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    super::assets::routes("/console/", &ASSETS, false)
}
