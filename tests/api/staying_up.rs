//! CONTRACT §17: what one client sends never takes the service from the others. Each test plays
//! an attacker on one loopback address (127.0.0.2) and a victim merchant on another (127.0.0.3),
//! and checks the rule's answer and that the victim keeps being served (the contract's "served":
//! the 99th percentile of its requests within 1 s, with the right answer).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use reqwest::Client;
use serde_json::{Value, json};
use storefront::app::{self, AppState, Settings};
use storefront::rate_limit::Rate;
use storefront::server::ConnectionLimits;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

use crate::helpers::*;

const ATTACKER: [u8; 4] = [127, 0, 0, 2];
const VICTIM: [u8; 4] = [127, 0, 0, 3];
const LIST: &str = "/v1/categories/list";

fn server_addr(app: &TestApp) -> SocketAddr {
    app.base.strip_prefix("http://").unwrap().parse().unwrap()
}

/// A TCP connection to `app` from the loopback address `from`.
async fn connect_from(from: [u8; 4], to: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::from((from, 0))).unwrap();
    socket.connect(to).await.unwrap()
}

/// An HTTP client whose connections come from `from`.
fn client_from(from: [u8; 4]) -> Client {
    Client::builder().local_address(IpAddr::from(from)).build().unwrap()
}

/// The head of a JSON POST to `path` with `key`, declaring `length` bytes of body.
fn head(path: &str, key: &str, length: usize) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    )
}

/// Sends `n` requests as the victim, one after another, each asserted 200; their 99th
/// percentile latency (the contract's measure of being served).
async fn victim_p99(app: &TestApp, key: &str, n: usize) -> Duration {
    let client = client_from(VICTIM);
    let mut latencies = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        let request = client
            .post(format!("{}{LIST}", app.base))
            .bearer_auth(key)
            .header("content-type", "application/json")
            .body("{}")
            .timeout(Duration::from_secs(10));
        let answer = read(request).await;
        assert_eq!(answer.status, 200, "{:#}", answer.body);
        latencies.push(started.elapsed());
    }
    latencies.sort();
    latencies[(n * 99).div_ceil(100) - 1]
}

/// Creates one warehouse per `n` as the victim (`key`, from the victim's address), each asserted
/// stored `ACTIVE`; their 99th percentile latency.
pub async fn victim_creates_p99(app: &TestApp, key: &str, fixtures: std::ops::Range<u32>) -> Duration {
    let client = client_from(VICTIM);
    let mut latencies = Vec::new();
    for n in fixtures {
        let started = Instant::now();
        let answer = read(
            client
                .post(format!("{}/v1/location/create", app.base))
                .bearer_auth(key)
                .header("content-type", "application/json")
                .body(json!({"locations": [warehouse(n)]}).to_string())
                .timeout(Duration::from_secs(30)),
        )
        .await;
        assert_eq!(answer.status, 200, "{:#}", answer.body);
        assert_eq!(answer.body["locations"][0]["status"], "ACTIVE");
        latencies.push(started.elapsed());
    }
    latencies.sort();
    latencies[(latencies.len() * 99).div_ceil(100) - 1]
}

fn settings(connections: ConnectionLimits) -> Settings {
    Settings {
        rate: Rate::Off,
        connections,
        ..Settings::default()
    }
}

#[tokio::test]
async fn silent_connections_and_bare_http2_prefaces_are_closed_when_no_head_arrives_in_time() {
    let app = TestApp::spawn_with_settings(settings(ConnectionLimits {
        head_timeout: Duration::from_secs(1),
        ..ConnectionLimits::default()
    }))
    .await;
    let addr = server_addr(&app);
    let mut silent = connect_from(ATTACKER, addr).await;
    let mut preface = connect_from(ATTACKER, addr).await;
    preface.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n").await.unwrap();
    let mut partial = connect_from(ATTACKER, addr).await;
    partial
        .write_all(b"POST /v1/categories/list HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    for (what, stream) in [
        ("silent", &mut silent),
        ("preface", &mut preface),
        ("partial head", &mut partial),
    ] {
        assert!(
            closed_within(stream, Duration::from_secs(8)).await,
            "{what}: still open"
        );
    }
    // A connection that sends its request in time is served as usual.
    assert_eq!(app.list(&json!({})).await.status, 200);
}

#[tokio::test]
async fn a_connection_with_no_request_in_progress_is_closed_after_the_idle_timeout() {
    let app = TestApp::spawn_with_settings(settings(ConnectionLimits {
        idle_timeout: Duration::from_secs(1),
        ..ConnectionLimits::default()
    }))
    .await;
    let mut stream = connect_from(VICTIM, server_addr(&app)).await;
    let body = "{}";
    let request = format!("{}{body}", head(LIST, &app.key, body.len()));
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = [0u8; 64];
    let n = stream.read(&mut answer).await.unwrap();
    assert!(
        answer[..n].starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer[..n])
    );
    assert!(
        closed_within(&mut stream, Duration::from_secs(8)).await,
        "idle keep-alive connection still open"
    );
}

#[tokio::test]
async fn one_client_at_its_connection_cap_is_refused_more_while_another_is_served() {
    let app = TestApp::spawn_with_settings(settings(ConnectionLimits {
        max_per_client: 16,
        ..ConnectionLimits::default()
    }))
    .await;
    let addr = server_addr(&app);
    let mut held = Vec::new();
    for _ in 0..16 {
        held.push(connect_from(ATTACKER, addr).await);
    }
    // The next one from the same address is closed at once; the held ones are not disturbed.
    let mut one_more = connect_from(ATTACKER, addr).await;
    assert!(
        closed_within(&mut one_more, Duration::from_secs(5)).await,
        "the 17th was kept"
    );
    let mut still_open = held.pop().unwrap();
    assert!(!closed_within(&mut still_open, Duration::from_millis(300)).await);
    held.push(still_open);
    assert!(victim_p99(&app, &app.key, 20).await <= Duration::from_secs(1));
    // A held connection that sends a request is served.
    let mut first = held.remove(0);
    first
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut answer = [0u8; 32];
    let n = first.read(&mut answer).await.unwrap();
    assert!(answer[..n].starts_with(b"HTTP/1.1 200"));
}

#[tokio::test]
async fn a_body_that_stops_arriving_is_answered_408_and_stores_nothing() {
    let app = TestApp::spawn_with_settings(Settings {
        rate: Rate::Off,
        body_stall_timeout: Duration::from_secs(1),
        ..Settings::default()
    })
    .await;
    let body = json!({"locations": [warehouse(1)]}).to_string();
    let mut stream = connect_from(ATTACKER, server_addr(&app)).await;
    let head = head("/v1/location/create", &app.key, body.len());
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&body.as_bytes()[..body.len() / 2]).await.unwrap();
    let answer = read_raw_answer(&mut stream).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    let json: Value = serde_json::from_str(answer.split("\r\n\r\n").nth(1).unwrap()).unwrap();
    assert_eq!(json["code"], "REQUEST_TIMEOUT");
    assert_eq!(json["error_type"], "ERROR_TYPE_BAD_REQUEST");
    let listed = app.list_locations(&json!({})).await;
    assert_eq!(listed.body["locations"], json!([]), "nothing stored");
    let metrics = app.get_text("/metrics").await;
    assert!(
        metrics.contains("http_requests_total{route=\"/v1/location/create\",status=\"408\"}"),
        "counted under 408"
    );
}

#[tokio::test]
async fn a_body_that_drips_past_the_request_time_is_answered_408() {
    let app = TestApp::spawn_with_settings(Settings {
        rate: Rate::Off,
        request_timeout: Duration::from_secs(4),
        body_stall_timeout: Duration::from_secs(1),
        ..Settings::default()
    })
    .await;
    let mut stream = connect_from(ATTACKER, server_addr(&app)).await;
    let head = head("/v1/location/create", &app.key, 100_000);
    stream.write_all(head.as_bytes()).await.unwrap();
    let dripping = async {
        // A byte every 200 ms: never a stall, never complete.
        for _ in 0..100 {
            if stream.write_all(b" ").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            let mut buf = [0u8; 4096];
            if let Ok(Ok(n)) = tokio::time::timeout(Duration::from_millis(1), stream.read(&mut buf)).await {
                return String::from_utf8_lossy(&buf[..n]).into_owned();
            }
        }
        String::new()
    };
    let answer = dripping.await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
}

/// `n` creates of `key` declaring 8 MiB bodies, `sent` bytes of each sent at once and then a byte
/// every half second each (for 20 s), from the attacker's address; abort the task to stop them.
async fn slow_bodies(addr: SocketAddr, key: &str, n: usize, sent: usize) -> tokio::task::JoinHandle<()> {
    let mut slow = Vec::new();
    for _ in 0..n {
        let mut stream = connect_from(ATTACKER, addr).await;
        let head = head("/v1/location/create", key, 8 * 1024 * 1024);
        stream.write_all(head.as_bytes()).await.unwrap();
        stream.write_all(&vec![b' '; sent]).await.unwrap();
        slow.push(stream);
    }
    tokio::spawn(async move {
        for _ in 0..40 {
            for stream in &mut slow {
                let _ = stream.write_all(b" ").await;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    })
}

#[tokio::test]
async fn sixteen_slow_large_bodies_of_one_merchant_leave_another_merchant_served() {
    let app = TestApp::spawn_with_settings(Settings {
        rate: Rate::Off,
        ..Settings::default()
    })
    .await;
    let attacker_key = app.merchant_key("attacker").await;
    let addr = server_addr(&app);
    let drip = slow_bodies(addr, &attacker_key, 16, 2 * 1024 * 1024).await;
    let victim = app.merchant_key("victim").await;
    let p99 = victim_creates_p99(&app, &victim, 0..20).await;
    assert!(p99 <= Duration::from_secs(1), "victim p99 {p99:?}");
    drip.abort();
}

#[tokio::test]
async fn servers_in_one_process_keep_their_own_body_budgets() {
    // Two servers over two databases: each one's first merchant has the same row number. The
    // first's merchant holds its whole quarter of the body budget (two 8 MiB bodies arriving
    // slowly); the second's merchant is not held up by it.
    let settings = || Settings {
        rate: Rate::Off,
        ..Settings::default()
    };
    let first = TestApp::spawn_with_settings(settings()).await;
    let second = TestApp::spawn_with_settings(settings()).await;
    let drip = slow_bodies(server_addr(&first), &first.key, 2, 1024 * 1024).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let answer = read(
        client_from(VICTIM)
            .post(format!("{}/v1/location/create", second.base))
            .bearer_auth(&second.key)
            .header("content-type", "application/json")
            .body(json!({"locations": [warehouse(1)]}).to_string())
            .timeout(Duration::from_secs(8)),
    )
    .await;
    assert_eq!(answer.status, 200, "{:#}", answer.body);
    drip.abort();
}

#[tokio::test]
async fn made_up_keys_cost_a_lookup_once_and_spend_the_address_budget_then_429_without_lookups() {
    let dir = tempfile::tempdir().unwrap();
    let inner = open_store(&fresh_database_url(dir.path()).await).await;
    let (store, lookups) = FaultyStore::wrap_counting(inner, Fault::Slow(Duration::ZERO));
    let app = TestApp::spawn_configured(
        store,
        dir,
        Settings {
            rate: Rate::Off,
            auth_failure_rate: Rate::PerMinute(std::num::NonZeroU32::new(1).unwrap()),
            auth_failure_burst: 5,
            ..Settings::default()
        },
    )
    .await;
    let attacker = client_from(ATTACKER);
    let post = |key: &str| {
        attacker
            .post(format!("{}{LIST}", app.base))
            .bearer_auth(key)
            .header("content-type", "application/json")
            .body("{}")
    };
    // The attacker's own valid key, served once before the flood: known valid from then on.
    assert_eq!(read(post(&app.key)).await.status, 200);
    let made_up = "sf_0123456789abcdef01234567_madeup";
    let before = lookups.load(Ordering::SeqCst);
    for _ in 0..5 {
        let answer = read(post(made_up)).await;
        assert_error(&answer, 401, "ERROR_TYPE_UNAUTHORIZED", "INVALID_API_KEY");
    }
    assert_eq!(
        lookups.load(Ordering::SeqCst) - before,
        1,
        "one lookup for one made-up key"
    );
    let refused = read(post(made_up)).await;
    let details = assert_error(&refused, 429, "ERROR_TYPE_RATE_LIMIT", "RATE_LIMITED");
    assert!(details["retry_after_ms"].as_u64().unwrap() > 0);
    assert!(refused.headers["retry-after"].to_str().unwrap().parse::<u64>().unwrap() >= 1);
    assert_eq!(
        refused.headers["ratelimit-policy"].to_str().unwrap(),
        "\"unauthenticated\";q=5;w=300"
    );
    let before = lookups.load(Ordering::SeqCst);
    for n in 0..20 {
        let answer = read(post(&format!("sf_0123456789abcdef0123{n:04}_other"))).await;
        assert_eq!(answer.status, 429);
    }
    assert_eq!(read(post("Basic x")).await.status, 429, "a malformed header too");
    assert_eq!(
        lookups.load(Ordering::SeqCst),
        before,
        "no lookup while the budget is spent"
    );
    // A key served within the last minute passes; another address has its budget whole.
    assert_eq!(read(post(&app.key)).await.status, 200);
    let victim = client_from(VICTIM);
    let answer = read(
        victim
            .post(format!("{}{LIST}", app.base))
            .bearer_auth(made_up)
            .header("content-type", "application/json")
            .body("{}"),
    )
    .await;
    assert_eq!(answer.status, 401);
    assert!(victim_p99(&app, &app.key, 20).await <= Duration::from_secs(1));
}

#[tokio::test]
async fn a_flood_of_made_up_keys_leaves_another_merchant_served() {
    let app = TestApp::spawn().await;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Eight connections of made-up keys, for as long as the victim works.
    let floods: Vec<_> = (0..8u32)
        .map(|c| {
            let (base, stop) = (app.base.clone(), Arc::clone(&stop));
            tokio::spawn(async move {
                let attacker = client_from(ATTACKER);
                let mut codes = std::collections::BTreeMap::new();
                let mut n = 0u32;
                while !stop.load(Ordering::SeqCst) {
                    n += 1;
                    let answer = attacker
                        .post(format!("{base}{LIST}"))
                        .bearer_auth(format!("sf_0123456789abcdef{c:02}{n:06}_x"))
                        .body("{}")
                        .send()
                        .await;
                    if let Ok(answer) = answer {
                        *codes.entry(answer.status().as_u16()).or_insert(0u32) += 1;
                    }
                }
                codes
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let p99 = victim_p99(&app, &app.key, 50).await;
    stop.store(true, Ordering::SeqCst);
    let mut codes = std::collections::BTreeMap::new();
    for flood in floods {
        for (code, n) in flood.await.unwrap() {
            *codes.entry(code).or_insert(0) += n;
        }
    }
    assert!(p99 <= Duration::from_secs(1), "victim p99 {p99:?}");
    assert_eq!(codes.keys().copied().collect::<Vec<u16>>(), [401, 429], "{codes:?}");
    // The burst of 100, and the few the budget refilled meanwhile (20/s).
    assert!((100..200).contains(&codes[&401]), "{codes:?}");
}

#[tokio::test]
async fn on_shutdown_idle_connections_close_at_once_and_the_server_returns() {
    let dir = tempfile::tempdir().unwrap();
    let store = open_store(&fresh_database_url(dir.path()).await).await;
    let key = storefront::auth::create_merchant(store.as_ref(), "m")
        .await
        .unwrap()
        .api_key;
    let state = AppState::load(Arc::clone(&store), settings(ConnectionLimits::default()))
        .await
        .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(app::serve(listener, state, async move {
        let _ = stopped.await;
    }));
    // An HTTP/1.1 keep-alive connection idle after a request, an HTTP/2 one (preface and
    // settings), and a silent one.
    let h1 = Client::new();
    let answer = read(
        h1.post(format!("http://{addr}{LIST}"))
            .bearer_auth(&key)
            .header("content-type", "application/json")
            .body("{}"),
    )
    .await;
    assert_eq!(answer.status, 200);
    let mut h2 = connect_from(ATTACKER, addr).await;
    h2.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
        .await
        .unwrap();
    let mut silent = connect_from(ATTACKER, addr).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let _ = stop.send(());
    let returned = tokio::time::timeout(Duration::from_secs(5), server).await;
    assert!(returned.is_ok(), "idle connections held the server past 5 s");
    assert!(closed_within(&mut silent, Duration::from_secs(1)).await);
    assert!(closed_within(&mut h2, Duration::from_secs(1)).await);
}

/// One request with a made-up key on a connection that opens with `proxy_line`; answers the status.
async fn through_balancer(balancer: [u8; 4], to: SocketAddr, proxy_line: &str) -> Option<u16> {
    let mut stream = connect_from(balancer, to).await;
    let request = format!(
        "{proxy_line}POST {LIST} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sf_000000000000000000000000_nope\r\n\
         Content-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer).await;
    answer.split_whitespace().nth(1).and_then(|s| s.parse().ok())
}

#[tokio::test]
async fn behind_a_load_balancer_the_per_client_rules_see_the_client_its_proxy_header_names() {
    let balancer = [127, 0, 0, 9];
    let app = TestApp::spawn_with_settings(Settings {
        auth_failure_rate: Rate::PerMinute(std::num::NonZeroU32::new(1).unwrap()),
        auth_failure_burst: 2,
        connections: ConnectionLimits {
            proxies: vec![IpAddr::from(balancer)].into(),
            ..ConnectionLimits::default()
        },
        ..settings(ConnectionLimits::default())
    })
    .await;
    let addr = server_addr(&app);
    let one = "PROXY TCP4 203.0.113.7 10.0.0.1 40000 8080\r\n";
    let other = "PROXY TCP4 198.51.100.4 10.0.0.1 40001 8080\r\n";
    // The 401 budget of 203.0.113.7 is spent, not the balancer's: another client behind it keeps its own.
    assert_eq!(through_balancer(balancer, addr, one).await, Some(401));
    assert_eq!(through_balancer(balancer, addr, one).await, Some(401));
    assert_eq!(through_balancer(balancer, addr, one).await, Some(429));
    assert_eq!(through_balancer(balancer, addr, other).await, Some(401));
    // The balancer's own connection (a health check) is the balancer's.
    assert_eq!(through_balancer(balancer, addr, "PROXY UNKNOWN\r\n").await, Some(401));
    // From the balancer, a connection without the header is closed unanswered.
    assert_eq!(through_balancer(balancer, addr, "").await, None);
    // From any other address the header is not taken: it is not HTTP, and answered 400 or closed.
    assert_ne!(through_balancer(ATTACKER, addr, other).await, Some(401));
}
