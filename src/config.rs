//! Settings from flags or the environment. Secrets (a database password) never
//! appear in `Debug` output or logs.

use std::net::SocketAddr;
use std::time::Duration;

use clap::{Args, ValueEnum};

use crate::domain::webhook::RetrySchedule;
use crate::rate_limit::Rate;
use crate::secret::Secret;
use crate::server::ConnectionLimits;
use crate::store::{DatabaseUrl, Pools, ReadReplicas};
use crate::webhooks::WebhookSettings;
use crate::webhooks::address::Reach;

#[derive(Args, Debug, Clone)]
pub struct DatabaseArgs {
    /// Database: sqlite://FILE (created when missing) or postgres://user:pass@host/db.
    #[arg(long, env = "STOREFRONT_DATABASE", default_value = "sqlite://storefront.db", global = true, value_parser = DatabaseUrl::parse, hide_env_values = true)]
    pub database: DatabaseUrl,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Pretty,
    Json,
}

#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, env = "STOREFRONT_ADDR", default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    /// On an empty database, create the merchant `demo` (printing its API key once) and load the
    /// built-in demo taxonomy.
    #[arg(long)]
    pub demo: bool,
    /// Requests per merchant: N/s or N/min; 0 disables limiting.
    #[arg(long, env = "STOREFRONT_RATE_LIMIT", default_value = "50/s")]
    pub rate_limit: Rate,
    /// Requests a merchant may send at once before the rate applies.
    #[arg(long, env = "STOREFRONT_RATE_BURST", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub rate_burst: u32,
    /// Requests per merchant made with its storefront keys, a budget apart from
    /// --rate-limit: N/s or N/min; 0 disables.
    #[arg(long, env = "STOREFRONT_STOREFRONT_RATE_LIMIT", default_value = "500/s")]
    pub storefront_rate_limit: Rate,
    /// Requests a merchant's storefront keys may send at once before their rate applies.
    #[arg(long, env = "STOREFRONT_STOREFRONT_RATE_BURST", default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    pub storefront_rate_burst: u32,
    /// A web origin (`https://shop.example`) whose pages may call the service from a browser
    /// (CORS); repeat for more. The environment variable takes them comma-separated.
    #[arg(long = "cors-origin", env = "STOREFRONT_CORS_ORIGINS", value_delimiter = ',', value_parser = parse_origin)]
    pub cors_origins: Vec<String>,
    /// Keep the merchants' rate budgets in this instance alone, even on PostgreSQL (where instances
    /// share them by default): for one instance, or to measure what sharing costs.
    #[arg(long, env = "STOREFRONT_LOCAL_RATE_BUDGET")]
    pub local_rate_budget: bool,
    /// Most /v1 requests in flight at once; more are answered 429 rather than queued.
    #[arg(long, env = "STOREFRONT_MAX_IN_FLIGHT", default_value_t = 512, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_in_flight: u64,
    /// Most connections open at once (lowered at start when the open-file limit is too low).
    #[arg(long, env = "STOREFRONT_MAX_CONNECTIONS", default_value_t = 4096, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_connections: u64,
    /// Most connections open at once from one client address; 0 for no such limit (behind a load
    /// balancer whose address every client shares).
    #[arg(long, env = "STOREFRONT_MAX_CONNECTIONS_PER_CLIENT", default_value_t = 256)]
    pub max_connections_per_client: u64,
    /// A load balancer (an IP address; repeat for more) whose connections open with a PROXY
    /// protocol header (HAProxy's `send-proxy`) naming the client: the per-client limits and the
    /// logs see that client. Connections from other addresses may not send one.
    #[arg(
        long = "proxy-protocol-from",
        env = "STOREFRONT_PROXY_PROTOCOL_FROM",
        value_delimiter = ','
    )]
    pub proxy_protocol_from: Vec<std::net::IpAddr>,
    /// Requests with an unknown or revoked key (401s) per client address: N/s or N/min; 0
    /// disables. Past it the address is answered 429 without a lookup.
    #[arg(long, env = "STOREFRONT_AUTH_FAILURE_LIMIT", default_value = "20/s")]
    pub auth_failure_limit: Rate,
    /// 401s a client address may get at once before `--auth-failure-limit` applies.
    #[arg(long, env = "STOREFRONT_AUTH_FAILURE_BURST", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub auth_failure_burst: u32,
    /// How long events are kept at least: N followed by d, h or m (`30d`, `12h`).
    #[arg(long, env = "STOREFRONT_EVENT_RETENTION", default_value = "30d", value_parser = parse_retention)]
    pub event_retention: Duration,
    /// The delays between a webhook delivery's attempts, e.g. `1s,2s,4s`; past
    /// the last the event is given up for that endpoint.
    #[arg(long, env = "STOREFRONT_WEBHOOK_RETRY_SCHEDULE", default_value = "5s,5m,30m,2h,5h,10h,14h,20h,24h", value_parser = RetrySchedule::parse)]
    pub webhook_retry_schedule: RetrySchedule,
    /// An endpoint none of whose attempts succeeded for this long is disabled (e.g. `5d`, `30s`).
    #[arg(long, env = "STOREFRONT_WEBHOOK_DISABLE_AFTER", default_value = "5d", value_parser = parse_webhook_duration)]
    pub webhook_disable_after: Duration,
    /// How long a webhook receiver has to answer an attempt, 100ms to 15s (`15s`, the most, unless
    /// set lower: for test set-ups whose receivers hang on purpose and should time out sooner).
    #[arg(long, env = "STOREFRONT_WEBHOOK_ATTEMPT_TIMEOUT", default_value = "15s", value_parser = parse_attempt_timeout)]
    pub webhook_attempt_timeout: Duration,
    /// Webhook endpoints may be private, loopback or link-local addresses: for receivers inside the
    /// operator's own network, and tests. Off by default (only public addresses are called).
    #[arg(long, env = "STOREFRONT_WEBHOOK_ALLOW_PRIVATE")]
    pub webhook_allow_private: bool,
    /// Webhook endpoints may be http:// URLs (https:// only by default).
    #[arg(long, env = "STOREFRONT_WEBHOOK_ALLOW_HTTP")]
    pub webhook_allow_http: bool,
    /// A PostgreSQL hot standby of --database (postgres://...; repeat for more) that searches made
    /// with a storefront key read from. The environment variable takes them
    /// comma-separated.
    #[arg(long = "read-replica", env = "STOREFRONT_READ_REPLICAS", value_delimiter = ',', value_parser = parse_replica, hide_env_values = true)]
    pub read_replicas: Vec<Secret>,
    /// A replica further behind the primary than this is not read until it catches up (`5s`,
    /// `500ms`, `1m`).
    #[arg(long, env = "STOREFRONT_REPLICA_MAX_LAG", default_value = "5s", value_parser = parse_max_lag)]
    pub replica_max_lag: Duration,
    /// SQLite: most reads at once, each on a connection of its own (default: four per core of
    /// this machine).
    #[arg(long, env = "STOREFRONT_DB_READERS", value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub db_readers: Option<u16>,
    /// PostgreSQL: connections per instance to the primary, and to each replica; the merchants'
    /// writes hold at most half of them (default: two per core of this machine, at least 4).
    #[arg(long, env = "STOREFRONT_PG_POOL_SIZE", value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub pg_pool_size: Option<u16>,
    /// Memory for the merchants' search indexes (`512MiB`, `2GiB`, `0` for none): the most
    /// recently searched merchants' are held, the others searched on the database (default: a
    /// quarter of this machine's memory, at most 2GiB).
    #[arg(long, env = "STOREFRONT_SEARCH_MEMORY", value_parser = parse_size)]
    pub search_memory: Option<usize>,
}

/// The default memory for search indexes when this machine's cannot be read.
pub const DEFAULT_SEARCH_MEMORY: usize = 256 << 20;

/// A quarter of this machine's memory, at most 2 GiB.
fn machine_search_memory() -> usize {
    let total_kib = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        m.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
    });
    total_kib.map_or(DEFAULT_SEARCH_MEMORY, |kib| (kib.saturating_mul(1024) / 4).min(2 << 30))
}

/// A size: bytes, or a whole number of `KiB`, `MiB` or `GiB`.
fn parse_size(text: &str) -> Result<usize, String> {
    let bad = || format!("{text:?} is not a size such as 512MiB, 2GiB or 0");
    let text = text.trim();
    let (digits, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, ""),
    };
    let shift = match unit {
        "" | "B" => 0,
        "KiB" => 10,
        "MiB" => 20,
        "GiB" => 30,
        _ => return Err(bad()),
    };
    let n: usize = digits.parse().map_err(|_| bad())?;
    n.checked_mul(1 << shift).ok_or_else(bad)
}

/// A replica's URL: a PostgreSQL one; empty for none (`STOREFRONT_READ_REPLICAS=`).
/// A replica's URL, kept as a secret: it may hold a password (`Debug` never shows it).
fn parse_replica(text: &str) -> Result<Secret, String> {
    if text.trim().is_empty() {
        return Ok(Secret::new(""));
    }
    match DatabaseUrl::parse(text.trim())? {
        DatabaseUrl::Postgres(url) => Ok(Secret::new(url)),
        DatabaseUrl::Sqlite(_) => {
            Err("a read replica is a PostgreSQL hot standby: postgres://user:pass@host/db".into())
        }
    }
}

fn parse_max_lag(text: &str) -> Result<Duration, String> {
    crate::domain::webhook::parse_duration(text)
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("{text:?} is not a lag bound such as 5s, 500ms or 1m"))
}

fn parse_attempt_timeout(text: &str) -> Result<Duration, String> {
    crate::domain::webhook::parse_duration(text)
        .filter(|d| (Duration::from_millis(100)..=crate::domain::webhook::ATTEMPT_TIMEOUT).contains(d))
        .ok_or_else(|| format!("{text:?} is not a time from 100ms to 15s such as 5s or 500ms"))
}

fn parse_webhook_duration(text: &str) -> Result<Duration, String> {
    crate::domain::webhook::parse_duration(text)
        .filter(|d| !d.is_zero())
        .ok_or_else(|| format!("{text:?} is not a duration such as 5d, 12h or 30s"))
}

/// `N` followed by `d`, `h` or `m` (N ≥ 1).
fn parse_retention(text: &str) -> Result<Duration, String> {
    let bad = || format!("{text:?} is not a retention: write N followed by d, h or m, e.g. 30d");
    let unit = match text.chars().last() {
        Some('d') => 86_400,
        Some('h') => 3_600,
        Some('m') => 60,
        _ => return Err(bad()),
    };
    let n: u64 = text[..text.len() - 1].parse().map_err(|_| bad())?;
    if n == 0 {
        return Err(bad());
    }
    n.checked_mul(unit).map(Duration::from_secs).ok_or_else(bad)
}

impl ServeArgs {
    /// The replicas to read buyers' searches from.
    pub fn read_replicas(&self) -> ReadReplicas {
        ReadReplicas {
            urls: self
                .read_replicas
                .iter()
                .filter(|url| !url.expose().is_empty())
                .map(|url| url.expose().to_owned())
                .collect(),
            max_lag: self.replica_max_lag,
        }
    }

    /// The database pools' sizes: the machine's unless given.
    pub fn pools(&self) -> Pools {
        Pools::of_machine(self.db_readers.map(usize::from), self.pg_pool_size.map(usize::from))
    }

    pub fn settings(&self) -> Settings {
        Settings {
            rate: self.rate_limit,
            burst: self.rate_burst,
            storefront_rate: self.storefront_rate_limit,
            storefront_burst: self.storefront_rate_burst,
            cors_origins: self.cors_origins.clone(),
            shared_rate_budget: !self.local_rate_budget,
            max_in_flight: usize::try_from(self.max_in_flight).unwrap_or(usize::MAX),
            connections: ConnectionLimits {
                max_connections: usize::try_from(self.max_connections).unwrap_or(usize::MAX),
                max_per_client: usize::try_from(self.max_connections_per_client).unwrap_or(usize::MAX),
                proxies: self.proxy_protocol_from.clone().into(),
                ..ConnectionLimits::default()
            }
            .fit_descriptors(),
            auth_failure_rate: self.auth_failure_limit,
            auth_failure_burst: self.auth_failure_burst,
            event_retention: self.event_retention,
            webhooks: WebhookSettings {
                retry: self.webhook_retry_schedule.clone(),
                disable_after: self.webhook_disable_after,
                attempt_timeout: self.webhook_attempt_timeout,
                reach: Reach {
                    allow_http: self.webhook_allow_http,
                    allow_private: self.webhook_allow_private,
                },
            },
            search_memory: self.search_memory.unwrap_or_else(machine_search_memory),
            ..Settings::default()
        }
    }
}

/// What the service is configured with (beyond the store).
#[derive(Clone, Debug)]
pub struct Settings {
    pub rate: Rate,
    pub burst: u32,
    /// The budget of a merchant's storefront keys.
    pub storefront_rate: Rate,
    pub storefront_burst: u32,
    /// The web origins allowed to call from a browser, as `scheme://host[:port]`.
    pub cors_origins: Vec<String>,
    /// Whether instances on a shared database share the merchants' budgets.
    pub shared_rate_budget: bool,
    /// Most `/v1` requests in flight at once; more are answered 429.
    pub max_in_flight: usize,
    /// A request's time in the server; after it the answer is 500 and nothing is stored.
    pub request_timeout: Duration,
    /// A body that stops arriving for this long is answered 408.
    pub body_stall_timeout: Duration,
    /// The accept loop's limits.
    pub connections: ConnectionLimits,
    /// 401s per client address.
    pub auth_failure_rate: Rate,
    pub auth_failure_burst: u32,
    /// Events are kept at least this long.
    pub event_retention: Duration,
    /// How webhooks are delivered.
    pub webhooks: WebhookSettings,
    /// The memory the merchants' search indexes may take, in bytes (0: none is held).
    pub search_memory: usize,
}

impl Default for Settings {
    /// The defaults `serve` documents in its --help.
    fn default() -> Self {
        Settings {
            rate: Rate::PerSecond(std::num::NonZeroU32::new(50).unwrap_or(std::num::NonZeroU32::MIN)),
            burst: 100,
            storefront_rate: Rate::PerSecond(std::num::NonZeroU32::new(500).unwrap_or(std::num::NonZeroU32::MIN)),
            storefront_burst: 1000,
            cors_origins: Vec::new(),
            shared_rate_budget: true,
            max_in_flight: 512,
            request_timeout: Duration::from_secs(30),
            body_stall_timeout: Duration::from_secs(10),
            connections: ConnectionLimits::default(),
            auth_failure_rate: Rate::PerSecond(std::num::NonZeroU32::new(20).unwrap_or(std::num::NonZeroU32::MIN)),
            auth_failure_burst: 100,
            event_retention: Duration::from_secs(30 * 86_400),
            webhooks: WebhookSettings::default(),
            search_memory: DEFAULT_SEARCH_MEMORY,
        }
    }
}

/// A web origin as browsers send it in `Origin`: `scheme://host[:port]`, nothing after, lower case
/// (a trailing `/` is dropped, as people copy origins from the address bar).
fn parse_origin(value: &str) -> Result<String, String> {
    let origin = value.trim().trim_end_matches('/').to_ascii_lowercase();
    let bad =
        || format!("--cors-origin {value:?}: write an origin such as https://shop.example or http://localhost:3000");
    let (scheme, rest) = origin.split_once("://").ok_or_else(bad)?;
    let host_ok = !rest.is_empty()
        && rest
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'));
    let default_port = match scheme {
        "https" => ":443",
        "http" => ":80",
        _ => return Err(bad()),
    };
    if !host_ok {
        return Err(bad());
    }
    // A browser leaves out its scheme's default port, so an origin written with it is kept as
    // the browser sends it.
    Ok(match origin.strip_suffix(default_port) {
        Some(without) => without.to_owned(),
        None => origin,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size("2GiB"), Ok(2 << 30));
        assert_eq!(parse_size("64KiB"), Ok(64 << 10));
        for bad in ["", "MiB", "1.5GiB", "2GB", "-1", "2 GiB", "99999999999999999999GiB"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert!((1..=2 << 30).contains(&machine_search_memory()));
    }

    #[test]
    fn origins() {
        for (given, kept) in [
            ("https://Shop.Example/", "https://shop.example"),
            ("http://localhost:3000", "http://localhost:3000"),
            ("http://[::1]:8080", "http://[::1]:8080"),
            // The scheme's default port, which a browser leaves out, is dropped; another is kept.
            ("https://shop.example:443/", "https://shop.example"),
            ("http://localhost:80", "http://localhost"),
            ("http://localhost:8080", "http://localhost:8080"),
            ("https://shop.example:80", "https://shop.example:80"),
        ] {
            assert_eq!(parse_origin(given), Ok(kept.to_owned()), "{given}");
        }
        for bad in [
            "shop.example",
            "ftp://shop.example",
            "https://",
            "https://shop.example/checkout",
            "*",
        ] {
            assert!(parse_origin(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn lag_bounds_and_replicas() {
        assert_eq!(parse_max_lag("5s"), Ok(Duration::from_secs(5)));
        assert_eq!(parse_max_lag("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_max_lag("1m"), Ok(Duration::from_secs(60)));
        for bad in ["", "0s", "5", "five", "-1s", "1.5s"] {
            assert!(parse_max_lag(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_replica("postgres://r@10.0.0.2/db"),
            Ok(Secret::new("postgres://r@10.0.0.2/db"))
        );
        assert_eq!(parse_replica(""), Ok(Secret::new("")), "none");
        let secret = parse_replica("postgres://u:hunter2@10.0.0.2/db").unwrap_or(Secret::new(""));
        assert!(
            !format!("{secret:?}").contains("hunter2"),
            "a replica's password is never shown by Debug"
        );
        let replicas = ReadReplicas {
            urls: vec!["postgres://u:hunter2@10.0.0.2/db".into()],
            max_lag: Duration::from_secs(5),
        };
        assert!(!format!("{replicas:?}").contains("hunter2"));
        assert!(parse_replica("sqlite://x.db").is_err());
        assert!(parse_replica("mysql://x").is_err());
    }

    #[test]
    fn retentions_are_days_hours_or_minutes() {
        assert_eq!(parse_retention("30d"), Ok(Duration::from_secs(30 * 86_400)));
        assert_eq!(parse_retention("12h"), Ok(Duration::from_secs(12 * 3_600)));
        assert_eq!(parse_retention("5m"), Ok(Duration::from_secs(300)));
        for bad in ["", "d", "0d", "30", "30s", "-1d", "1.5h", "99999999999999999999d"] {
            assert!(parse_retention(bad).is_err(), "{bad}");
        }
    }
}
