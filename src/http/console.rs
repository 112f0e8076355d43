//! The merchant's console: a page and its modules, compiled into the binary from
//! `assets/console/` and served without authentication. It has no operation of its own: it signs in
//! with the merchant's key and does everything through the documented `/v1` API, in the merchant's
//! rate budget. Its answers carry the console's Content-Security-Policy (`app::security_headers`).

use axum::Router;

use super::assets::{Asset, folder};

const ASSETS: [Asset; 13] = folder!("console":
    "index.html", "console.css", "app.js", "api.js", "dom.js", "plan.js", "locations.js", "form.js", "imports.js",
    "names.js", "events.js", "webhooks.js", "keys.js",
);

/// The routes of the console's files (and `/console`, redirected to `/console/`).
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    super::assets::routes("/console/", &ASSETS, false)
}
