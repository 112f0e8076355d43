//! One delivery attempt over HTTP: the endpoint's host resolved now (5 s at most), every address
//! it resolves to checked (only public ones, unless allowed) and tried in turn until one
//! connects, the connection made to that very address (the client's resolver is pinned to it: no
//! second lookup), no redirect followed, 15 s for the exchange, at most 64 KiB of the answer read
//! and discarded. An attempt never takes longer than `worker::MAX_ATTEMPT`.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use reqwest::{Client, Url};

use async_trait::async_trait;

use super::address::{Reach, refused};
use super::config::{Clock, SystemClock};
use super::failure::{self, no_answer};
use super::sign::signatures;
use crate::domain::webhook::{ATTEMPT_TIMEOUT, MAX_ANSWER_BYTES};
use crate::secret::Secret;

/// How long resolving the endpoint's host may take.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);
/// How long connecting to one address may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How an attempt ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sent {
    /// The receiver's status, when it answered.
    pub status: Option<u16>,
    /// Why it failed, in words (none when it was delivered).
    pub error: Option<String>,
    /// `Retry-After` of a 429 or 503.
    pub retry_after: Option<Duration>,
    pub took: Duration,
}

impl Sent {
    pub fn delivered(&self) -> bool {
        self.error.is_none()
    }
}

/// What to send: the event, to whom, signed with which secrets.
pub struct Delivery<'a> {
    pub url: &'a str,
    pub event_id: &'a str,
    pub body: &'a str,
    pub secrets: &'a [Secret],
}

/// Most clients kept (one per host and address, so that connections are reused): memory, a few
/// KiB each, not the machine's cores; more hosts than this are served by clients made afresh.
const CLIENTS: usize = 512;

/// The HTTP clients of the attempts, each pinned to one checked address.
pub struct Sender {
    clients: Mutex<HashMap<(String, SocketAddr), Client>>,
    /// How long the exchange may take (`ATTEMPT_TIMEOUT` unless the operator says less).
    timeout: Duration,
}

impl Default for Sender {
    fn default() -> Self {
        Sender::new(ATTEMPT_TIMEOUT)
    }
}

impl Sender {
    /// Attempts whose exchange may take `timeout` (at most `ATTEMPT_TIMEOUT`).
    pub fn new(timeout: Duration) -> Self {
        Sender {
            clients: Mutex::default(),
            timeout: timeout.min(ATTEMPT_TIMEOUT),
        }
    }

    fn client(&self, host: &str, addr: SocketAddr) -> Result<Client, String> {
        let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
        let key = (host.to_owned(), addr);
        if let Some(client) = clients.get(&key) {
            return Ok(client.clone());
        }
        if clients.len() >= CLIENTS {
            clients.clear();
        }
        // No proxy from the environment: the connection goes to the address checked, nowhere else.
        let client = Client::builder()
            .no_proxy()
            .resolve(host, addr)
            .redirect(reqwest::redirect::Policy::none())
            .timeout(self.timeout)
            .connect_timeout(CONNECT_TIMEOUT.min(self.timeout))
            .user_agent(concat!("storefront-webhooks/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("no HTTP client: {e}"))?;
        clients.insert(key, client.clone());
        Ok(client)
    }

    /// Makes one attempt.
    pub async fn send(&self, delivery: Delivery<'_>, reach: Reach) -> Sent {
        let started = Instant::now();
        let bound = RESOLVE_TIMEOUT + self.timeout;
        let outcome = tokio::time::timeout(bound, self.exchange(&delivery, reach))
            .await
            .unwrap_or_else(|_| Err(no_answer(self.timeout)));
        let mut sent = outcome.unwrap_or_else(|error| Sent {
            status: None,
            error: Some(error),
            retry_after: None,
            took: Duration::ZERO,
        });
        sent.took = started.elapsed();
        sent
    }

    async fn exchange(&self, d: &Delivery<'_>, reach: Reach) -> Result<Sent, String> {
        let url = Url::parse(d.url).map_err(|e| format!("the URL is not valid: {e}"))?;
        let host = url.host_str().ok_or("the URL names no host")?.to_owned();
        let port = url.port_or_known_default().ok_or("the URL names no port")?;
        let addrs: Vec<SocketAddr> = match url.host() {
            Some(url::Host::Ipv4(ip)) => vec![SocketAddr::new(IpAddr::V4(ip), port)],
            Some(url::Host::Ipv6(ip)) => vec![SocketAddr::new(IpAddr::V6(ip), port)],
            _ => tokio::time::timeout(RESOLVE_TIMEOUT, tokio::net::lookup_host((host.as_str(), port)))
                .await
                .map_err(|_| format!("resolving {host} took longer than {} s", RESOLVE_TIMEOUT.as_secs()))?
                .map_err(|e| failure::unknown_host(&host, &e))?
                .collect(),
        };
        let mut refusals = Vec::new();
        let allowed: Vec<SocketAddr> = addrs
            .into_iter()
            .filter(|addr| match refused(addr.ip()).filter(|_| !reach.allow_private) {
                Some(why) => {
                    refusals.push(format!("{} ({why})", addr.ip()));
                    false
                }
                None => true,
            })
            .collect();
        if allowed.is_empty() {
            return Err(if refusals.is_empty() {
                format!("no connection: the name {host} resolves to no address")
            } else {
                failure::refused_as_private(&host, &refusals)
            });
        }
        let timestamp = Clock::now_ms(&SystemClock) / 1000;
        let signature = signatures(d.secrets, d.event_id, timestamp, d.body)?;
        // Each address in turn while it cannot be connected to; an address that connected and
        // then failed ends the attempt (the receiver may have the event).
        let mut failures = Vec::new();
        for addr in allowed {
            let client = self.client(&host, addr)?;
            let request = client
                .post(url.clone())
                .header("content-type", "application/json")
                .header("webhook-id", d.event_id)
                .header("webhook-timestamp", timestamp.to_string())
                .header("webhook-signature", &signature)
                .body(d.body.to_owned());
            match request.send().await {
                Ok(response) => return read_answer(response, self.timeout).await,
                Err(e) if e.is_connect() => {
                    failures.push(failure::not_connected(addr, &e, CONNECT_TIMEOUT.min(self.timeout)))
                }
                Err(e) => return Err(describe(&e, self.timeout)),
            }
        }
        Err(failure::no_connection(&failures))
    }
}

/// How an attempt is made: over HTTP (`send::Sender`), or by a test's fake.
#[async_trait]
pub trait Transport: Send + Sync + 'static {
    async fn send(&self, delivery: Delivery<'_>, reach: Reach) -> Sent;
}

#[async_trait]
impl Transport for Sender {
    async fn send(&self, delivery: Delivery<'_>, reach: Reach) -> Sent {
        Sender::send(self, delivery, reach).await
    }
}

/// The receiver's answer: its status, a 429's or 503's `Retry-After` (seconds or an HTTP date),
/// and up to 64 KiB of its body read and discarded.
async fn read_answer(mut response: reqwest::Response, timeout: Duration) -> Result<Sent, String> {
    let status = response.status();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .filter(|_| status.as_u16() == 429 || status.as_u16() == 503)
        .and_then(|v| retry_after(v, std::time::SystemTime::now()));
    let mut read = 0;
    while read < MAX_ANSWER_BYTES {
        match response.chunk().await {
            Ok(Some(chunk)) => read += chunk.len(),
            Ok(None) => break,
            Err(e) => return Err(describe(&e, timeout)),
        }
    }
    let error = (!status.is_success()).then(|| match status.as_u16() {
        300..=399 => format!("answered {status}: redirects are not followed"),
        _ => format!("answered {status}"),
    });
    Ok(Sent {
        status: Some(status.as_u16()),
        error,
        retry_after,
        took: Duration::ZERO,
    })
}

/// A `Retry-After` value (RFC 9110 §10.2.3): a number of seconds, or an HTTP date (the time from
/// `now` until then; none for a date past).
pub fn retry_after(value: &str, now: std::time::SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    at.duration_since(now).ok()
}

/// Why an exchange that had begun failed.
fn describe(e: &reqwest::Error, timeout: Duration) -> String {
    if e.is_timeout() {
        no_answer(timeout)
    } else {
        failure::broken_off(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_is_seconds_or_an_http_date() {
        let now = httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap_or(std::time::UNIX_EPOCH);
        assert_eq!(retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(
            retry_after("Sun, 06 Nov 1994 08:51:37 GMT", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(retry_after("Sun, 06 Nov 1994 08:48:37 GMT", now), None, "a date past");
        assert_eq!(retry_after("soon", now), None);
    }
}
