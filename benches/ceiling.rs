//! The benchmark's ceiling: our HTTP stack (the same tokio/axum/hyper) doing no work beyond
//! HTTP and JSON. `POST /v1/categories/list` answers a pre-serialised 100-item page;
//! `POST /v1/location/create` parses the body into `serde_json::Value` and answers a
//! pre-serialised 200-item result; the location list and the search answer the page given.
//! Nothing is authenticated, validated or stored.
//!
//! Usage: `ceiling ADDR PAGE_FILE` (PAGE_FILE: the JSON answer to serve for the list route).
//! With `CEILING_WORK_US=N` in the environment, a search first keeps its thread busy for N µs: what
//! a server that costs N µs a search more than the ceiling can serve on the same machine.

use axum::Router;
use axum::body::Bytes;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::post;

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:8090".into());
    let page = Bytes::from(
        std::fs::read_to_string(args.next().unwrap_or_default()).unwrap_or_else(|_| {
            r#"{"categories":[],"pagination":{"next_cursor":null,"has_next":false,"total":0}}"#.into()
        }),
    );
    let results: Vec<String> = (0..200)
        .map(|i| {
            format!(
                r#"{{"location_id":"01a1fdd7-a73f-760a-8972-{i:012}","merchant_location_id":"m-{i}","name":"Location {i}","status":"ACTIVE","errors":[]}}"#
            )
        })
        .collect();
    let created = Bytes::from(format!(r#"{{"locations":[{}]}}"#, results.join(",")));
    // The lists and the search answer the page given: the ceiling of an answer of that size.
    let list = {
        let page = page.clone();
        post(move || {
            let page = page.clone();
            async move { ([(header::CONTENT_TYPE, "application/json")], page) }
        })
    };
    let work = std::time::Duration::from_micros(
        std::env::var("CEILING_WORK_US")
            .ok()
            .and_then(|us| us.parse().ok())
            .unwrap_or(0),
    );
    let search = {
        let page = page.clone();
        post(move || {
            let page = page.clone();
            async move {
                if !work.is_zero() {
                    let began = std::time::Instant::now();
                    while began.elapsed() < work {
                        std::hint::spin_loop();
                    }
                }
                ([(header::CONTENT_TYPE, "application/json")], page)
            }
        })
    };
    let app = Router::new()
        .route("/v1/categories/list", list.clone())
        .route("/v1/location/list", list)
        .route("/v1/location/search", search)
        .route(
            "/v1/location/create",
            post(move |body: Bytes| {
                let created = created.clone();
                async move {
                    let parsed: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                    std::hint::black_box(parsed);
                    ([(header::CONTENT_TYPE, "application/json")], created).into_response()
                }
            }),
        )
        .layer(axum::extract::DefaultBodyLimit::max(8 * 1024 * 1024));
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!("ceiling is listening on http://{}", listener.local_addr()?);
    axum::serve(listener, app).await
}
