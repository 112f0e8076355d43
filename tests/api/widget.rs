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
