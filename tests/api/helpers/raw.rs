//! Talking HTTP/1.1 over a bare TCP connection, for what a client library will not send or
//! will not show: a head alone, a body sent slowly, the connection's end.

use std::time::{Duration, Instant};

use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

/// Whether the server closes `stream` within `within` (reads until EOF, an error, or the wait).
pub async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let until = Instant::now() + within;
    let mut buf = [0u8; 4096];
    loop {
        let left = until.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) => return true,
            Ok(Ok(_)) => {}
            Err(_) => return false,
        }
    }
}

/// One answer read from `stream`: its head and as much body as its `Content-Length` says, none
/// without one (an interim `100 Continue`; every final answer of the service has a length), or
/// what came before the connection ended or 20 s passed.
pub async fn read_raw_answer(stream: &mut TcpStream) -> String {
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(Duration::from_secs(20), stream.read(&mut buf)).await {
            Ok(Ok(0) | Err(_)) | Err(_) => break,
            Ok(Ok(n)) => {
                answer.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&answer);
                if let Some((head, body)) = text.split_once("\r\n\r\n") {
                    let length = head
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length: ")
                                .map(str::to_owned)
                        })
                        .map_or(Some(0), |n| n.trim().parse::<usize>().ok());
                    if length.is_some_and(|length| body.len() >= length) {
                        break;
                    }
                }
            }
        }
    }
    String::from_utf8_lossy(&answer).into_owned()
}
