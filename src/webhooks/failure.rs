//! Why an attempt got no answer, in words a merchant can act on: no connection (and why: refused,
//! no route, no answer, the secure connection not accepted), no answer in time, the connection
//! broken off, or an address refused as private. The HTTP library's own messages are kept only as
//! the last detail, in brackets, where they name something the words do not.

use std::error::Error;
use std::io::ErrorKind;
use std::net::SocketAddr;
use std::time::Duration;

/// The innermost cause of an error: what actually happened, without the layers' wrappings.
fn innermost<'a>(e: &'a (dyn Error + 'static)) -> &'a (dyn Error + 'static) {
    let mut at = e;
    while let Some(cause) = at.source() {
        at = cause;
    }
    at
}

/// The kind of the first I/O error among an error's causes.
fn io_kind(e: &(dyn Error + 'static)) -> Option<ErrorKind> {
    let mut at = Some(e);
    while let Some(err) = at {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            return Some(io.kind());
        }
        at = err.source();
    }
    None
}

/// Why connecting to one address of the endpoint failed.
pub fn not_connected(addr: SocketAddr, e: &(dyn Error + 'static), connect_timeout: Duration) -> String {
    match io_kind(e) {
        Some(ErrorKind::ConnectionRefused) => {
            format!("{addr} refused the connection (nothing listens on that port, or a firewall refuses it)")
        }
        Some(ErrorKind::TimedOut) => {
            format!(
                "{addr} did not accept the connection within {} s",
                connect_timeout.as_secs()
            )
        }
        Some(ErrorKind::HostUnreachable | ErrorKind::NetworkUnreachable) => {
            format!("{addr} cannot be reached from this service (no route to it)")
        }
        Some(ErrorKind::InvalidData | ErrorKind::InvalidInput) => format!(
            "{addr} connected, but the secure connection was not accepted: {} (is its certificate valid for this name?)",
            innermost(e)
        ),
        _ => format!("{addr} could not be connected to ({})", innermost(e)),
    }
}

/// An attempt for which no address connected.
pub fn no_connection(failures: &[String]) -> String {
    format!("no connection: {}", failures.join("; "))
}

/// An attempt that got no answer within `timeout`.
pub fn no_answer(timeout: Duration) -> String {
    format!("no answer within {} s", timeout.as_secs_f64())
}

/// An exchange that failed after the connection was made.
pub fn broken_off(e: &(dyn Error + 'static)) -> String {
    match io_kind(e) {
        Some(ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted | ErrorKind::BrokenPipe) => {
            "the receiver closed the connection before its answer was complete".to_owned()
        }
        _ => format!(
            "the connection broke off before the receiver's answer was complete ({})",
            innermost(e)
        ),
    }
}

/// A host name that resolves to no address the service may call.
pub fn refused_as_private(host: &str, refusals: &[String]) -> String {
    format!(
        "refused as a private address: {host} resolves to {}, and only public addresses are called",
        refusals.join(", ")
    )
}

/// A host name that could not be resolved.
pub fn unknown_host(host: &str, e: &(dyn Error + 'static)) -> String {
    format!(
        "no connection: the name {host} could not be resolved ({})",
        innermost(e)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("client error (Connect)")]
    struct Wrapped(#[source] std::io::Error);

    fn addr() -> SocketAddr {
        SocketAddr::from(([203, 0, 113, 7], 443))
    }

    #[test]
    fn a_refused_connection_is_said_in_words() {
        let e = Wrapped(std::io::Error::new(ErrorKind::ConnectionRefused, "tcp connect error"));
        let said = not_connected(addr(), &e, Duration::from_secs(5));
        assert_eq!(
            said,
            "203.0.113.7:443 refused the connection (nothing listens on that port, or a firewall refuses it)"
        );
        assert!(!said.contains("client error"), "no library wording");
        assert_eq!(
            no_connection(&[said]),
            "no connection: 203.0.113.7:443 refused the connection (nothing listens on that port, or a firewall refuses it)"
        );
    }

    #[test]
    fn a_connection_that_times_out_or_has_no_route_is_said_in_words() {
        let slow = Wrapped(std::io::Error::new(ErrorKind::TimedOut, "deadline"));
        assert_eq!(
            not_connected(addr(), &slow, Duration::from_secs(5)),
            "203.0.113.7:443 did not accept the connection within 5 s"
        );
        let far = Wrapped(std::io::Error::new(ErrorKind::HostUnreachable, "no route"));
        assert!(not_connected(addr(), &far, Duration::from_secs(5)).ends_with("(no route to it)"));
    }

    #[test]
    fn a_refused_certificate_names_the_cause() {
        let tls = Wrapped(std::io::Error::new(
            ErrorKind::InvalidData,
            "invalid peer certificate: UnknownIssuer",
        ));
        assert_eq!(
            not_connected(addr(), &tls, Duration::from_secs(5)),
            "203.0.113.7:443 connected, but the secure connection was not accepted: invalid peer certificate: \
             UnknownIssuer (is its certificate valid for this name?)"
        );
    }

    #[test]
    fn a_reset_exchange_is_said_in_words() {
        let reset = Wrapped(std::io::Error::new(ErrorKind::ConnectionReset, "reset by peer"));
        assert_eq!(
            broken_off(&reset),
            "the receiver closed the connection before its answer was complete"
        );
        assert_eq!(no_answer(Duration::from_secs(15)), "no answer within 15 s");
    }
}
