//! CONTRACT §17 *Connections* and §1's clean stop, as a client sees them on the wire: an idle
//! keep-alive connection lives 60 s (HTTP/1.1 and h2c), one head deadline from accept (a load
//! balancer's PROXY header included), and a stop that lets the last answer arrive whole.
//! About connections, not storage: run on the SQLite pass only.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde_json::{Value, json};
use storefront::app::Settings;
use storefront::rate_limit::Rate;
use storefront::server::ConnectionLimits;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use crate::helpers::*;

const LIST: &str = "/v1/categories/list";

fn server_addr(base: &str) -> SocketAddr {
    base.strip_prefix("http://").unwrap().parse().unwrap()
}

/// A TCP connection to `to` from `from`, with a receive buffer of `rcvbuf` bytes when given (a
/// client that reads slowly then holds the server's writes back).
async fn connect(from: [u8; 4], to: SocketAddr, rcvbuf: Option<u32>) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    if let Some(size) = rcvbuf {
        socket.set_recv_buffer_size(size).unwrap();
    }
    socket.bind(SocketAddr::from((from, 0))).unwrap();
    socket.connect(to).await.unwrap()
}

/// An HTTP/1.1 keep-alive request for `path` with `key` and a JSON `body`.
fn request_h1(path: &str, key: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Reads one HTTP/1.1 answer from `stream`: its status and its body (by `Content-Length`, or
/// chunked). Reads `pace` bytes at a time with a pause after each, to play a slow reader; calls
/// `first_bytes` once the head has arrived.
async fn read_answer_h1(
    stream: &mut TcpStream,
    pace: Option<(usize, Duration)>,
    mut first_bytes: impl FnMut(),
) -> (u16, Vec<u8>) {
    let mut got = Vec::new();
    let mut buf = vec![0u8; pace.map_or(64 * 1024, |(n, _)| n)];
    let mut head_end = None;
    let mut called = false;
    loop {
        let n = stream.read(&mut buf).await.unwrap_or(0);
        got.extend_from_slice(&buf[..n]);
        if head_end.is_none() {
            head_end = got.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4);
        }
        if let Some(end) = head_end {
            if !called {
                called = true;
                first_bytes();
            }
            if let Some(body) = whole_body(&got[..end], &got[end..]) {
                let status = String::from_utf8_lossy(&got[9..12]).parse().unwrap();
                return (status, body);
            }
        }
        if n == 0 {
            let status = if got.len() >= 12 {
                String::from_utf8_lossy(&got[9..12]).parse().unwrap_or(0)
            } else {
                0
            };
            return (status, Vec::new());
        }
        if let Some((_, pause)) = pace {
            tokio::time::sleep(pause).await;
        }
    }
}

/// The body, once `rest` holds all of it by the framing `head` declares.
fn whole_body(head: &[u8], rest: &[u8]) -> Option<Vec<u8>> {
    let head = String::from_utf8_lossy(head).to_ascii_lowercase();
    if let Some(length) = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .map(|v| v.trim().parse::<usize>().unwrap())
    {
        return (rest.len() >= length).then(|| rest[..length].to_vec());
    }
    // Chunked: size line, data, CRLF, … a zero-size chunk ends it.
    let mut body = Vec::new();
    let mut at = 0;
    loop {
        let line_end = at + rest.get(at..)?.windows(2).position(|w| w == b"\r\n")?;
        let size = usize::from_str_radix(std::str::from_utf8(&rest[at..line_end]).ok()?.trim(), 16).ok()?;
        let data = line_end + 2;
        if size == 0 {
            return Some(body);
        }
        body.extend_from_slice(rest.get(data..data + size)?);
        at = data + size + 2;
    }
}

/// An h2c connection (prior knowledge) over `stream`: the request sender, and a task that ends
/// when the server closes the connection.
async fn h2c(
    stream: TcpStream,
) -> (
    hyper::client::conn::http2::SendRequest<Empty<Bytes>>,
    tokio::task::JoinHandle<()>,
) {
    let (sender, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
        .await
        .unwrap();
    let driver = tokio::spawn(async move {
        let _ = conn.await;
    });
    (sender, driver)
}

/// A GET of `/healthz` on an h2c connection: its status (0: the connection refused it).
async fn h2_healthz(sender: &mut hyper::client::conn::http2::SendRequest<Empty<Bytes>>) -> u16 {
    let request = hyper::Request::get("http://x/healthz").body(Empty::new()).unwrap();
    match sender.send_request(request).await {
        Ok(answer) => answer.status().as_u16(),
        Err(_) => 0,
    }
}

#[tokio::test]
async fn an_idle_keep_alive_connection_lives_60_s_on_http1_and_h2c_not_the_head_deadline() {
    // CONTRACT §17's defaults: 10 s for a first head, 60 s with no request in progress.
    let app = TestApp::spawn_with_settings(Settings {
        rate: Rate::Off,
        ..Settings::default()
    })
    .await;
    let addr = server_addr(&app.base);
    let list = request_h1(LIST, &app.key, "{}");
    // Two connections of each kind, each answered once: one is asked again once idle for 50 s,
    // the other is left idle until it is closed, so that one wait of about 60 s shows both.
    let mut h1 = connect([127, 0, 0, 1], addr, None).await;
    let mut h1_left = connect([127, 0, 0, 1], addr, None).await;
    for stream in [&mut h1, &mut h1_left] {
        stream.write_all(list.as_bytes()).await.unwrap();
        assert_eq!(read_answer_h1(stream, None, || {}).await.0, 200);
    }
    let (mut h2, h2_open) = h2c(connect([127, 0, 0, 1], addr, None).await).await;
    let (mut h2_left, h2_left_open) = h2c(connect([127, 0, 0, 1], addr, None).await).await;
    assert_eq!(h2_healthz(&mut h2).await, 200);
    assert_eq!(h2_healthz(&mut h2_left).await, 200);

    // 50 s of silence: past the 10 s head deadline, within the 60 s idle one.
    tokio::time::sleep(Duration::from_secs(50)).await;
    assert!(
        !closed_within(&mut h1_left, Duration::from_millis(100)).await,
        "HTTP/1.1: closed while idle < 60 s"
    );
    assert!(!h2_left_open.is_finished(), "h2c: closed while idle < 60 s");
    h1.write_all(list.as_bytes()).await.unwrap();
    assert_eq!(
        read_answer_h1(&mut h1, None, || {}).await.0,
        200,
        "HTTP/1.1: closed while idle < 60 s"
    );
    assert_eq!(h2_healthz(&mut h2).await, 200, "h2c: closed while idle < 60 s");
    assert!(!h2_open.is_finished());

    // And closed once idle for 60 s (within 75 s).
    assert!(
        closed_within(&mut h1_left, Duration::from_secs(25)).await,
        "HTTP/1.1 still open after 75 s idle"
    );
    let h2_closed = tokio::time::timeout(Duration::from_secs(25), h2_left_open).await;
    assert!(h2_closed.is_ok(), "h2c still open after 75 s idle");
}

#[tokio::test]
async fn a_load_balancer_s_connection_has_one_head_deadline_from_accept() {
    let balancer = [127, 0, 0, 9];
    let app = TestApp::spawn_with_settings(Settings {
        rate: Rate::Off,
        connections: ConnectionLimits {
            head_timeout: Duration::from_secs(4),
            proxies: vec![IpAddr::from(balancer)].into(),
            ..ConnectionLimits::default()
        },
        ..Settings::default()
    })
    .await;
    let addr = server_addr(&app.base);
    let accepted = Instant::now();
    let mut stream = connect(balancer, addr, None).await;
    // The PROXY header late but in time, then only part of a head: the 4 s run from accept, not
    // again from the header (which would close it 7.5 s after accept).
    tokio::time::sleep(Duration::from_millis(3500)).await;
    stream
        .write_all(b"PROXY TCP4 203.0.113.7 10.0.0.1 40000 8080\r\nPOST /v1/categories/list HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    assert!(closed_within(&mut stream, Duration::from_secs(5)).await);
    let closed_after = accepted.elapsed();
    assert!(
        closed_after < Duration::from_secs(6),
        "closed {closed_after:?} after accept: the head deadline started again after the PROXY header"
    );
    // One whose head arrives within the deadline from accept is served.
    let mut served = connect(balancer, addr, None).await;
    let request = format!(
        "PROXY TCP4 203.0.113.8 10.0.0.1 40000 8080\r\n{}",
        request_h1(LIST, &app.key, "{}")
    );
    served.write_all(request.as_bytes()).await.unwrap();
    assert_eq!(read_answer_h1(&mut served, None, || {}).await.0, 200);
}

/// A server process over a SQLite file whose merchant has 1,000 locations with the longest
/// comments and instructions (3-byte characters): a page of all of them is about 9 MB.
async fn server_with_a_large_page() -> (tempfile::TempDir, Server, String) {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("drain.db");
    let key = merchant_create(&db, "drain")["api_key"].as_str().unwrap().to_owned();
    let server = Server::start_binary_with(
        std::path::Path::new(crate::helpers::BIN),
        &format!("sqlite://{}", db.display()),
        &["--rate-limit", "0"],
    );
    let client = reqwest::Client::new();
    for chunk in 0..20u32 {
        let items: Vec<Value> = (chunk * 50..chunk * 50 + 50)
            .map(|n| {
                let mut item = pickup_point(n);
                item["comment"] = json!("漢".repeat(1000));
                item["instruction"] = json!("字".repeat(2000));
                item
            })
            .collect();
        let answer = read(
            client
                .post(format!("{}/v1/location/create", server.base))
                .bearer_auth(&key)
                .json(&json!({ "locations": items })),
        )
        .await;
        assert_eq!(answer.status, 200, "{:#}", answer.body);
        let statuses: Vec<&Value> = answer.body["locations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| &r["status"])
            .collect();
        assert!(statuses.iter().all(|s| *s == "ACTIVE"), "{statuses:?}");
    }
    (dir, server, key)
}

async fn exits_0_within_30_s(mut server: Server) {
    let exited = tokio::task::spawn_blocking(move || server.child.wait().map(|s| s.code()));
    let code = tokio::time::timeout(Duration::from_secs(30), exited)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(code, Some(0));
}

fn assert_whole_page(body: &[u8]) {
    let page: Value =
        serde_json::from_slice(body).unwrap_or_else(|e| panic!("{} bytes, not a whole page: {e}", body.len()));
    let locations = page["locations"].as_array().unwrap();
    assert_eq!(locations.len(), 1000);
    assert!(body.len() > 8_000_000, "{} bytes", body.len());
    assert_eq!(locations[999]["instruction"].as_str().unwrap().chars().count(), 2000);
}

#[tokio::test]
async fn at_sigterm_a_large_answer_to_a_slow_http1_reader_arrives_whole_then_the_process_exits_0() {
    let (_dir, server, key) = server_with_a_large_page().await;
    let mut stream = connect([127, 0, 0, 1], server_addr(&server.base), Some(4096)).await;
    let list = request_h1("/v1/location/list", &key, r#"{"pagination": {"limit": 1000}}"#);
    stream.write_all(list.as_bytes()).await.unwrap();
    // 16 KiB every 5 ms: about 3 MB/s, so most of the page is still to be written at SIGTERM.
    let (status, body) = read_answer_h1(&mut stream, Some((16 * 1024, Duration::from_millis(5))), || {
        server.signal("-TERM")
    })
    .await;
    assert_eq!(status, 200);
    assert_whole_page(&body);
    exits_0_within_30_s(server).await;
}

#[tokio::test]
async fn at_sigterm_a_large_answer_to_a_slow_h2c_reader_arrives_whole_then_the_process_exits_0() {
    let (_dir, server, key) = server_with_a_large_page().await;
    let stream = connect([127, 0, 0, 1], server_addr(&server.base), Some(4096)).await;
    let (mut sender, conn) = hyper::client::conn::http2::Builder::new(TokioExecutor::new())
        .initial_stream_window_size(16 * 1024)
        .initial_connection_window_size(16 * 1024)
        .handshake::<_, http_body_util::Full<Bytes>>(TokioIo::new(stream))
        .await
        .unwrap();
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let request = hyper::Request::post("http://x/v1/location/list")
        .header("authorization", format!("Bearer {key}"))
        .header("content-type", "application/json")
        .body(http_body_util::Full::new(Bytes::from_static(
            br#"{"pagination": {"limit": 1000}}"#,
        )))
        .unwrap();
    let answer = sender.send_request(request).await.unwrap();
    assert_eq!(answer.status(), 200);
    let mut body = answer.into_body();
    let mut got = Vec::new();
    let mut signalled = false;
    while let Some(frame) = body.frame().await {
        let frame = frame.unwrap_or_else(|e| panic!("after {} bytes: {e}", got.len()));
        if let Some(data) = frame.data_ref() {
            got.extend_from_slice(data);
        }
        if !signalled {
            signalled = true;
            server.signal("-TERM");
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_whole_page(&got);
    exits_0_within_30_s(server).await;
}
