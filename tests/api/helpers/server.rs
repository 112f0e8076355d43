//! The `storefront` binary as a test starts it: the CLI's commands, and `serve` as a process of
//! its own on a free port.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::read;

pub const BIN: &str = env!("CARGO_BIN_EXE_storefront");

pub fn storefront(db: &Path) -> Command {
    storefront_at(&format!("sqlite://{}", db.display()))
}

/// The binary, with its database at `url`.
pub fn storefront_at(url: &str) -> Command {
    let mut command = Command::new(BIN);
    command
        .env("STOREFRONT_DATABASE", url)
        .env("STOREFRONT_LOG_FORMAT", "json");
    command
}

/// Creates a merchant through the CLI; returns the printed object.
pub fn merchant_create(db: &Path, name: &str) -> Value {
    merchant_create_at(&format!("sqlite://{}", db.display()), name)
}

pub fn merchant_create_at(url: &str, name: &str) -> Value {
    let out = storefront_at(url)
        .args(["merchant", "create", "--name", name, "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 1, "exactly one JSON object: {stdout}");
    let issued: Value = serde_json::from_str(&stdout).unwrap();
    let keys: Vec<&String> = issued.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 4);
    for key in ["merchant_id", "key_id", "api_key"] {
        assert!(issued[key].as_str().is_some_and(|s| !s.is_empty()), "{key}");
    }
    assert_eq!(issued["scope"], "full", "merchant create issues a full key");
    issued
}

pub struct Server {
    pub child: Child,
    pub base: String,
}

impl Server {
    /// Starts `serve` on a free port and waits until it listens.
    pub fn start(db: &Path) -> Server {
        Server::start_at(&format!("sqlite://{}", db.display()))
    }

    pub fn start_at(url: &str) -> Server {
        Server::start_binary(Path::new(BIN), url)
    }

    /// Starts `serve` from the binary at `bin` (the release one, say).
    pub fn start_binary(bin: &Path, url: &str) -> Server {
        Server::start_binary_with(bin, url, &[])
    }

    /// Starts `serve` with extra flags.
    pub fn start_binary_with(bin: &Path, url: &str, flags: &[&str]) -> Server {
        Server::start_on(bin, url, "127.0.0.1:0", flags)
    }

    /// Starts `serve` on `addr` (the port of a server that was stopped, say).
    pub fn start_on(bin: &Path, url: &str, addr: &str, flags: &[&str]) -> Server {
        let mut child = Command::new(bin)
            .env("STOREFRONT_DATABASE", url)
            .env("STOREFRONT_LOG_FORMAT", "json")
            .args(["serve", "--addr", addr])
            .args(flags)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let mut lines = BufReader::new(stderr).lines();
        let deadline = Instant::now() + Duration::from_secs(30);
        let base = loop {
            assert!(Instant::now() < deadline, "server did not start");
            let line = lines.next().expect("server exited before listening").unwrap();
            if let Some(rest) = line.strip_prefix("storefront is listening on ") {
                break rest.trim().to_owned();
            }
        };
        // Keep draining stderr so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Server { child, base }
    }

    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub async fn create(base: &str, key: &str, items: &[Value]) -> Vec<Value> {
    let answer = read(
        reqwest::Client::new()
            .post(format!("{base}/v1/location/create"))
            .bearer_auth(key)
            .json(&json!({ "locations": items })),
    )
    .await;
    assert_eq!(answer.status, 200, "{:#}", answer.body);
    answer.body["locations"].as_array().unwrap().clone()
}

/// `command serve` on a free port, its stderr (the log) written to `log_path`.
pub fn serve_logging_to(mut command: Command, log_path: &Path) -> std::process::Child {
    command
        .args(["serve", "--addr", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log_path).unwrap())
        .spawn()
        .unwrap()
}

/// What `found` finds in the log at `log_path`, read again until it does (30 s at most).
pub fn wait_in_log<T>(log_path: &Path, found: impl Fn(&str) -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(log_path).unwrap_or_default();
        if let Some(value) = found(&text) {
            return value;
        }
        assert!(
            Instant::now() < deadline,
            "not in the log within 30 s (the server did not start?): {}",
            log_path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
