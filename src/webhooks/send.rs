//! One delivery attempt over HTTP: the endpoint's host resolved now, the address checked (only
//! public ones, unless allowed), the connection made to that very address (the client's resolver
//! is pinned to it: no second lookup), no redirect followed, 15 s for the whole exchange, at most
//! 64 KiB of the answer read and discarded.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use reqwest::{Client, Url};

use super::address::{Reach, refused};
use super::sign::signatures;
use crate::domain::webhook::{ATTEMPT_TIMEOUT, MAX_ANSWER_BYTES};

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
    pub secrets: &'a [String],
}

/// Most clients kept (one per host and address, so that connections are reused).
const CLIENTS: usize = 512;

/// The HTTP clients of the attempts, each pinned to one checked address.
#[derive(Default)]
pub struct Sender {
    clients: Mutex<HashMap<(String, SocketAddr), Client>>,
}

impl Sender {
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
            .timeout(ATTEMPT_TIMEOUT)
            .connect_timeout(Duration::from_secs(5))
            .user_agent(concat!("storefront-webhooks/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("no HTTP client: {e}"))?;
        clients.insert(key, client.clone());
        Ok(client)
    }

    /// Makes one attempt.
    pub async fn send(&self, delivery: Delivery<'_>, reach: Reach) -> Sent {
        let started = Instant::now();
        let mut sent = match self.exchange(&delivery, reach).await {
            Ok(sent) => sent,
            Err(error) => Sent {
                status: None,
                error: Some(error),
                retry_after: None,
                took: Duration::ZERO,
            },
        };
        sent.took = started.elapsed();
        sent
    }

    async fn exchange(&self, d: &Delivery<'_>, reach: Reach) -> Result<Sent, String> {
        let url = Url::parse(d.url).map_err(|e| format!("the URL is not valid: {e}"))?;
        let host = url.host_str().ok_or("the URL names no host")?.to_owned();
        let port = url.port_or_known_default().ok_or("the URL names no port")?;
        let addr = match url.host() {
            Some(url::Host::Ipv4(ip)) => SocketAddr::new(IpAddr::V4(ip), port),
            Some(url::Host::Ipv6(ip)) => SocketAddr::new(IpAddr::V6(ip), port),
            _ => tokio::time::timeout(Duration::from_secs(5), tokio::net::lookup_host((host.as_str(), port)))
                .await
                .map_err(|_| format!("resolving {host} took longer than 5 s"))?
                .map_err(|e| format!("{host} could not be resolved: {e}"))?
                .next()
                .ok_or_else(|| format!("{host} resolves to no address"))?,
        };
        if let Some(why) = refused(addr.ip()).filter(|_| !reach.allow_private) {
            return Err(format!(
                "{host} resolves to {}, {why}: only public addresses are called",
                addr.ip()
            ));
        }
        let timestamp = crate::store::now_ms() / 1000;
        let client = self.client(&host, addr)?;
        let mut response = client
            .post(url)
            .header("content-type", "application/json")
            .header("webhook-id", d.event_id)
            .header("webhook-timestamp", timestamp.to_string())
            .header(
                "webhook-signature",
                signatures(d.secrets, d.event_id, timestamp, d.body),
            )
            .body(d.body.to_owned())
            .send()
            .await
            .map_err(|e| describe(&e))?;
        let status = response.status();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .filter(|_| status.as_u16() == 429 || status.as_u16() == 503)
            .map(Duration::from_secs);
        // The answer is read (up to 64 KiB) and discarded.
        let mut read = 0;
        while read < MAX_ANSWER_BYTES {
            match response.chunk().await {
                Ok(Some(chunk)) => read += chunk.len(),
                Ok(None) => break,
                Err(e) => return Err(describe(&e)),
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
}

fn describe(e: &reqwest::Error) -> String {
    if e.is_timeout() {
        format!("no answer within {} s", ATTEMPT_TIMEOUT.as_secs())
    } else if e.is_connect() {
        format!("could not connect: {}", crate::http::error::ErrorChain(e))
    } else {
        format!("the exchange failed: {}", crate::http::error::ErrorChain(e))
    }
}
