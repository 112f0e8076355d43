//! The widget's files (CONTRACT §13.3): served without a key, with their types and the page's
//! policy, the same bytes as `assets/widget/`.

use reqwest::Method;

use crate::helpers::*;

#[tokio::test]
async fn the_widget_and_its_page_are_served_without_a_key() {
    let app = TestApp::spawn().await;
    let files = [
        (
            "/widget/",
            "text/html; charset=utf-8",
            include_str!("../../assets/widget/index.html"),
        ),
        (
            "/widget/pickup.js",
            "text/javascript; charset=utf-8",
            include_str!("../../assets/widget/pickup.js"),
        ),
        (
            "/widget/demo.js",
            "text/javascript; charset=utf-8",
            include_str!("../../assets/widget/demo.js"),
        ),
        (
            "/widget/demo.css",
            "text/css; charset=utf-8",
            include_str!("../../assets/widget/demo.css"),
        ),
    ];
    for (path, content_type, body) in files {
        let response = app.request(Method::GET, path).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let headers = response.headers().clone();
        assert_eq!(headers["content-type"], content_type, "{path}");
        assert_eq!(headers["x-content-type-options"], "nosniff");
        assert_eq!(headers["cross-origin-resource-policy"], "cross-origin");
        assert!(headers.contains_key("cache-control"));
        assert_eq!(response.text().await.unwrap(), body, "{path}");
        // The page runs only what the service serves, and is never framed.
        if path == "/widget/" {
            let policy = headers["content-security-policy"].to_str().unwrap();
            for part in [
                "default-src 'none'",
                "script-src 'self'",
                "connect-src 'self'",
                "frame-ancestors 'none'",
            ] {
                assert!(policy.contains(part), "{policy}");
            }
            assert!(!policy.contains("unsafe"), "{policy}");
        }
    }
    let bare = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .get(format!("{}/widget", app.base))
        .send()
        .await
        .unwrap();
    assert_eq!(bare.status(), 308);
    assert_eq!(bare.headers()["location"], "/widget/");
    let answer = read(app.request(Method::GET, "/widget/nothing.js")).await;
    assert_error(&answer, 404, "ERROR_TYPE_UNSPECIFIED", "NOT_FOUND");
}

/// The console's files (CONTRACT §21): served without a key, the same bytes as `assets/console/`,
/// each under the console's policy (everything from the service, nothing inline, never framed),
/// `nosniff` and `no-referrer`; not for other origins to include. `/v1` answers keep their own.
#[tokio::test]
async fn the_console_is_served_without_a_key_under_its_policy() {
    let app = TestApp::spawn().await;
    let files = [
        (
            "/console/",
            "text/html",
            include_str!("../../assets/console/index.html"),
        ),
        (
            "/console/console.css",
            "text/css",
            include_str!("../../assets/console/console.css"),
        ),
        (
            "/console/app.js",
            "text/javascript",
            include_str!("../../assets/console/app.js"),
        ),
        (
            "/console/api.js",
            "text/javascript",
            include_str!("../../assets/console/api.js"),
        ),
        (
            "/console/dom.js",
            "text/javascript",
            include_str!("../../assets/console/dom.js"),
        ),
        (
            "/console/plan.js",
            "text/javascript",
            include_str!("../../assets/console/plan.js"),
        ),
        (
            "/console/locations.js",
            "text/javascript",
            include_str!("../../assets/console/locations.js"),
        ),
        (
            "/console/events.js",
            "text/javascript",
            include_str!("../../assets/console/events.js"),
        ),
        (
            "/console/webhooks.js",
            "text/javascript",
            include_str!("../../assets/console/webhooks.js"),
        ),
    ];
    for (path, content_type, body) in files {
        let response = app.request(Method::GET, path).send().await.unwrap();
        assert_eq!(response.status(), 200, "{path}");
        let headers = response.headers().clone();
        assert!(
            headers["content-type"].to_str().unwrap().starts_with(content_type),
            "{path}"
        );
        let policy = headers["content-security-policy"].to_str().unwrap();
        assert!(
            policy.contains("default-src 'self'") && policy.contains("frame-ancestors 'none'"),
            "{policy}"
        );
        assert!(
            !policy.contains("unsafe-inline") && !policy.contains("unsafe-eval"),
            "{policy}"
        );
        assert_eq!(headers["x-content-type-options"], "nosniff");
        assert_eq!(headers["referrer-policy"], "no-referrer");
        assert!(!headers.contains_key("cross-origin-resource-policy"), "{path}");
        assert_eq!(response.text().await.unwrap(), body, "{path}");
    }
    // Every file the page names is served (no module left out of the binary).
    for module in include_str!("../../assets/console/app.js")
        .lines()
        .filter_map(|l| l.split("from './").nth(1))
        .map(|rest| rest.trim_end_matches("';"))
    {
        let response = app
            .request(Method::GET, &format!("/console/{module}"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{module}");
    }
    let api = app.post("/v1/webhook/list", &serde_json::json!({})).await;
    assert_eq!(api.status, 200);
    let answer = app.request(Method::POST, "/v1/webhook/list").send().await.unwrap();
    assert!(
        !answer.headers().contains_key("content-security-policy"),
        "a /v1 answer keeps its own headers"
    );
}
