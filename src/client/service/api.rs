//! The service over HTTP, as a merchant's integration talks to it: what one attempt
//! of a request came to, and the waits between attempts.
//!
//! An attempt's outcome decides what may be sent again. A 429 was not processed: wait its
//! `retry_after_ms` and send it again, as long as the waits of one request add up to at most
//! `MAX_RATE_WAIT`. A refused connection never reached the service, and a 500 `INTERNAL` or a 408
//! `REQUEST_TIMEOUT` stored nothing: send again after a backoff. A timeout, a
//! cut connection, a 503 `OUTCOME_UNKNOWN` or another 5xx may or may not have been processed: only
//! what is safe to repeat is sent again (the caller decides which items). Any other answer is
//! final.

use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use clap::Args;
use reqwest::StatusCode;
use serde::Serialize;
use serde_json::Value;

/// Where the service is and who is calling.
#[derive(Args, Clone)]
pub struct ClientArgs {
    /// The service's base URL.
    #[arg(long, env = "STOREFRONT_URL", default_value = "http://127.0.0.1:8080")]
    pub url: String,
    /// The merchant's API key (never printed).
    #[arg(long, env = "STOREFRONT_API_KEY", hide_env_values = true)]
    pub api_key: String,
}

impl std::fmt::Debug for ClientArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientArgs")
            .field("url", &self.url)
            .field("api_key", &"<redacted>")
            .finish()
    }
}

/// Longest a request may take before its outcome is unknown (the service gives up at 30 s).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The first backoff; each next one doubles, up to `MAX_BACKOFF`.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// The most one request waits out 429s in all before it gives up.
pub const MAX_RATE_WAIT: Duration = Duration::from_secs(300);

/// A request-level error answer.
#[derive(Clone, Debug, Serialize)]
pub struct RequestError {
    pub status: u16,
    pub code: String,
    pub message: String,
}

/// What one attempt came to.
#[derive(Debug)]
pub enum Attempt {
    /// 200, with its body.
    Answered(Bytes),
    /// 429: not processed; send again after this.
    Wait(Duration),
    /// Not processed: nothing listens there (the connection was refused).
    Unreachable(String),
    /// Not processed: the request could not be written, or the service answered 500 or 408
    /// (nothing stored).
    NotStored(String),
    /// Maybe processed: a timeout, a cut connection, another 5xx, an answer that is not ours.
    Unknown(String),
    /// A final error answer (400, 401, 404, …).
    Refused(RequestError),
}

/// How a request that is safe to repeat ended when it did not get its 200.
#[derive(Debug)]
pub enum Failed {
    Refused(RequestError),
    /// Retries spent: the last reason.
    GaveUp(String),
}

impl std::fmt::Display for Failed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failed::Refused(e) => write!(f, "{} {}: {}", e.status, e.code, e.message),
            Failed::GaveUp(why) => write!(f, "gave up: {why}"),
        }
    }
}

/// The client of one merchant.
pub struct Api {
    http: reqwest::Client,
    base: String,
    key: String,
}

impl Api {
    pub fn new(args: &ClientArgs) -> anyhow::Result<Api> {
        let http = reqwest::Client::builder()
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .context("building the HTTP client")?;
        Ok(Api {
            http,
            base: args.url.trim_end_matches('/').to_owned(),
            key: args.api_key.clone(),
        })
    }

    /// Sends `body` to `path` once.
    pub async fn attempt<B: Serialize + ?Sized>(&self, path: &str, body: &B) -> Attempt {
        match serde_json::to_vec(body) {
            Ok(bytes) => self.attempt_json(path, bytes).await,
            Err(e) => Attempt::NotStored(format!("the request could not be written: {e}")),
        }
    }

    /// Sends a body that is already JSON text to `path` once.
    pub async fn attempt_json(&self, path: &str, body: Vec<u8>) -> Attempt {
        let sent = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.key)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await;
        let response = match sent {
            Ok(response) => response,
            Err(e) if e.is_connect() => return Attempt::Unreachable(format!("cannot connect to {}: {e}", self.base)),
            Err(e) => return Attempt::Unknown(describe(&e)),
        };
        let status = response.status();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let bytes = match response.bytes().await {
            Ok(bytes) => bytes,
            Err(e) => return Attempt::Unknown(describe(&e)),
        };
        if status == StatusCode::OK {
            return Attempt::Answered(bytes);
        }
        let body = serde_json::from_slice::<Value>(&bytes).ok();
        let error = body.as_ref().map(|b| RequestError {
            status: status.as_u16(),
            code: b["code"].as_str().unwrap_or_default().to_owned(),
            message: b["message"].as_str().unwrap_or_default().to_owned(),
        });
        match (status, body, error) {
            (StatusCode::TOO_MANY_REQUESTS, body, _) => {
                let exact = body
                    .as_ref()
                    .and_then(|b| b["details"]["retry_after_ms"].as_u64())
                    .map(Duration::from_millis);
                Attempt::Wait(exact.or(retry_after).unwrap_or(Duration::from_secs(1)))
            }
            (StatusCode::INTERNAL_SERVER_ERROR, _, Some(e)) if e.code == "INTERNAL" => {
                Attempt::NotStored(format!("500 INTERNAL: {}", e.message))
            }
            (StatusCode::REQUEST_TIMEOUT, _, Some(e)) if e.code == "REQUEST_TIMEOUT" => {
                Attempt::NotStored(format!("408 REQUEST_TIMEOUT: {}", e.message))
            }
            (StatusCode::SERVICE_UNAVAILABLE, _, Some(e)) if e.code == "OUTCOME_UNKNOWN" => {
                Attempt::Unknown(format!("503 OUTCOME_UNKNOWN: {}", e.message))
            }
            (s, _, Some(e)) if s.is_client_error() && !e.code.is_empty() => Attempt::Refused(e),
            (s, _, _) => Attempt::Unknown(format!("answered {s} without the service's answer")),
        }
    }

    /// Sends a request that is safe to repeat (a list, an archive) until it is answered 200, or
    /// refused, or `backoff` is spent.
    pub async fn call<B: Serialize + ?Sized>(
        &self,
        path: &str,
        body: &B,
        backoff: &mut Backoff,
    ) -> Result<Bytes, Failed> {
        loop {
            match self.attempt(path, body).await {
                Attempt::Answered(body) => return Ok(body),
                Attempt::Refused(e) => return Err(Failed::Refused(e)),
                Attempt::Wait(wait) => {
                    if !backoff.wait_out(wait).await {
                        return Err(Failed::GaveUp(backoff.rate_limited()));
                    }
                }
                Attempt::Unreachable(why) | Attempt::NotStored(why) | Attempt::Unknown(why) => {
                    if !backoff.pause().await {
                        return Err(Failed::GaveUp(why));
                    }
                }
            }
        }
    }
}

/// A reqwest error with its causes (the first line alone says only "error sending request").
fn describe(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Exponential backoff with jitter, at most `retries` pauses; and the 429 waits of one request,
/// at most `MAX_RATE_WAIT` in all.
#[derive(Debug)]
pub struct Backoff {
    left: u32,
    next: Duration,
    rate_waited: Duration,
}

impl Backoff {
    pub fn new(retries: u32) -> Backoff {
        Backoff {
            left: retries,
            next: FIRST_BACKOFF,
            rate_waited: Duration::ZERO,
        }
    }

    /// Waits out a 429's `wait`; `false` (at once) when that would pass `MAX_RATE_WAIT` in all.
    pub async fn wait_out(&mut self, wait: Duration) -> bool {
        if self.rate_waited + wait > MAX_RATE_WAIT {
            return false;
        }
        self.rate_waited += wait;
        tokio::time::sleep(wait).await;
        true
    }

    /// Why a request that kept being answered 429 was given up.
    pub fn rate_limited(&self) -> String {
        format!(
            "still rate limited (429) after waiting {} s; try again later or ask for a higher --rate-limit",
            self.rate_waited.as_secs()
        )
    }

    /// Waits before the next attempt; `false` (at once) when no retry is left.
    pub async fn pause(&mut self) -> bool {
        if self.left == 0 {
            return false;
        }
        self.left -= 1;
        tokio::time::sleep(jittered(self.next)).await;
        self.next = (self.next * 2).min(MAX_BACKOFF);
        true
    }
}

/// Between half of `d` and all of it, so that many clients that failed together do not return
/// together.
fn jittered(d: Duration) -> Duration {
    let half = d / 2;
    let spread = crate::clock::millis_u64(half).max(1);
    let random = getrandom::u64().unwrap_or(0) % spread;
    half + Duration::from_millis(random)
}
