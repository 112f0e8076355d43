//! HAProxy's PROXY protocol (versions 1 and 2), on connections from the load balancers the
//! operator names (`--proxy-protocol-from`): the header that opens such a connection names the
//! client it carries, and that client is the one the per-client rules (connections
//! per client, the 401 budget) and the logs see. Connections from any other address are taken at
//! their word and may not send the header: a client cannot claim another's address.
//!
//! The header is read exactly, never a byte of the request after it: 12 bytes tell the two
//! versions apart (version 2's signature; version 1 is text of at least 15 bytes beginning
//! `PROXY `), then version 2's length, or version 1's line up to its CRLF; `ppp` parses it.

use std::io;
use std::net::SocketAddr;

use ppp::v2;
use ppp::{HeaderResult, v1};
use tokio::io::AsyncReadExt;
use tokio::net::TcpStream;

const V2_SIGNATURE: [u8; 12] = *b"\r\n\r\n\0\r\nQUIT\n";
/// The longest version 1 header (CRLF included).
const V1_MAX: usize = 107;
/// The longest version 2 header taken (addresses and the TLVs a load balancer adds).
const V2_MAX: usize = 16 + 1024;

/// Reads the header that opens a connection from a trusted load balancer; answers the client it
/// carries, or `None` for the balancer's own connection (a health check: `LOCAL`, `UNKNOWN`).
pub async fn read_header(stream: &mut TcpStream) -> io::Result<Option<SocketAddr>> {
    let mut header = vec![0u8; 12];
    stream.read_exact(&mut header).await?;
    if header[..] == V2_SIGNATURE {
        header.resize(16, 0);
        stream.read_exact(&mut header[12..]).await?;
        let length = usize::from(u16::from_be_bytes([header[14], header[15]]));
        if 16 + length > V2_MAX {
            return Err(invalid("a PROXY header longer than this server takes"));
        }
        header.resize(16 + length, 0);
        stream.read_exact(&mut header[16..]).await?;
    } else if header.starts_with(b"PROXY ") {
        while !header.ends_with(b"\r\n") {
            if header.len() >= V1_MAX {
                return Err(invalid("a PROXY line longer than 107 bytes"));
            }
            header.push(stream.read_u8().await?);
        }
    } else {
        return Err(invalid(
            "no PROXY header from a load balancer named by --proxy-protocol-from",
        ));
    }
    client_of(&header)
}

/// The client a complete header names.
fn client_of(header: &[u8]) -> io::Result<Option<SocketAddr>> {
    match HeaderResult::parse(header) {
        HeaderResult::V1(Ok(parsed)) => Ok(match parsed.addresses {
            v1::Addresses::Tcp4(a) => Some(SocketAddr::from((a.source_address, a.source_port))),
            v1::Addresses::Tcp6(a) => Some(SocketAddr::from((a.source_address, a.source_port))),
            v1::Addresses::Unknown => None,
        }),
        HeaderResult::V2(Ok(parsed)) => Ok(match (parsed.command, parsed.addresses) {
            (v2::Command::Proxy, v2::Addresses::IPv4(a)) => Some(SocketAddr::from((a.source_address, a.source_port))),
            (v2::Command::Proxy, v2::Addresses::IPv6(a)) => Some(SocketAddr::from((a.source_address, a.source_port))),
            _ => None,
        }),
        HeaderResult::V1(Err(e)) => Err(invalid(&format!("a malformed PROXY header: {e}"))),
        HeaderResult::V2(Err(e)) => Err(invalid(&format!("a malformed PROXY header: {e}"))),
    }
}

fn invalid(message: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, message.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    /// Sends `bytes` on a fresh connection; answers what `read_header` made of them and the bytes
    /// left for HTTP.
    async fn through(bytes: Vec<u8>) -> (io::Result<Option<SocketAddr>>, Vec<u8>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let addr = listener.local_addr().unwrap_or_else(|e| panic!("{e}"));
        let sender = tokio::spawn(async move {
            let mut client = TcpStream::connect(addr).await.unwrap_or_else(|e| panic!("{e}"));
            client.write_all(&bytes).await.unwrap_or_else(|e| panic!("{e}"));
        });
        let (mut stream, _) = listener.accept().await.unwrap_or_else(|e| panic!("{e}"));
        let result = read_header(&mut stream).await;
        sender.await.unwrap_or_else(|e| panic!("{e}"));
        let mut rest = Vec::new();
        if result.is_ok() {
            stream.read_to_end(&mut rest).await.unwrap_or_else(|e| panic!("{e}"));
        }
        (result, rest)
    }

    #[tokio::test]
    async fn both_versions_name_the_client_and_leave_the_request_whole() {
        let request = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".to_vec();
        let v1 = [
            b"PROXY TCP4 203.0.113.7 10.0.0.1 51234 8080\r\n".to_vec(),
            request.clone(),
        ]
        .concat();
        let (client, rest) = through(v1).await;
        assert_eq!(
            client.ok().flatten(),
            Some("203.0.113.7:51234".parse().unwrap_or_else(|e| panic!("{e}")))
        );
        assert_eq!(rest, request);

        let v6 = [b"PROXY TCP6 2001:db8::1 ::1 4000 8080\r\n".to_vec(), request.clone()].concat();
        let (client, _) = through(v6).await;
        assert_eq!(
            client.ok().flatten(),
            Some("[2001:db8::1]:4000".parse().unwrap_or_else(|e| panic!("{e}")))
        );

        let (client, rest) = through([b"PROXY UNKNOWN\r\n".to_vec(), request.clone()].concat()).await;
        assert_eq!(client.ok(), Some(None), "the balancer's own connection");
        assert_eq!(rest, request);

        let header = v2::Builder::with_addresses(
            v2::Version::Two | v2::Command::Proxy,
            v2::Protocol::Stream,
            (
                SocketAddr::from(([198, 51, 100, 9], 40000)),
                SocketAddr::from(([10, 0, 0, 1], 8080)),
            ),
        )
        .build()
        .unwrap_or_else(|e| panic!("{e}"));
        let (client, rest) = through([header, request.clone()].concat()).await;
        assert_eq!(
            client.ok().flatten(),
            Some("198.51.100.9:40000".parse().unwrap_or_else(|e| panic!("{e}")))
        );
        assert_eq!(rest, request);
    }

    #[tokio::test]
    async fn anything_else_is_refused() {
        for bytes in [
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
            b"PROXY TCP4 not-an-address 10.0.0.1 1 2\r\n".to_vec(),
            [b"PROXY TCP4 ".to_vec(), vec![b'1'; 200]].concat(),
        ] {
            let (client, _) = through(bytes.clone()).await;
            assert!(client.is_err(), "{:?}", String::from_utf8_lossy(&bytes));
        }
    }
}
