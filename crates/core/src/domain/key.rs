//! Storefront keys a merchant makes for itself: the rules of a key's label and of the web origins
//! such a key may be used from.

use super::json::is_single_line;

/// Most characters in a key's label.
pub const MAX_LABEL_CHARS: usize = 100;
/// Most origins one key may name.
pub const MAX_ORIGINS: usize = 10;
/// Most storefront keys not revoked that a merchant may make for itself: enough for a shop per
/// key and their replacements, few enough that a runaway script stops early.
pub const MAX_STOREFRONT_KEYS: usize = 20;
/// Longest origin: a host name is at most 253 characters, a port 6 with its colon.
pub const MAX_ORIGIN_LEN: usize = "https://".len() + 253 + 6;

/// Why `label` is not a key's label, if it is not.
pub fn label_problem(label: &str) -> Option<String> {
    let chars = label.chars().count();
    if chars == 0 || chars > MAX_LABEL_CHARS {
        return Some(format!(
            "label must be 1 to {MAX_LABEL_CHARS} characters (it has {chars}): a name people recognise the key by"
        ));
    }
    (!is_single_line(label)).then(|| "label must not contain control characters: it is a line people read".to_owned())
}

/// What an allowed origin must look like, as its error says.
pub const ORIGIN_FORM: &str = "an origin is https://host[:port] (http:// only for localhost and 127.0.0.1), \
                               lower case, with no path, query or trailing slash, and no default port \
                               (:443 for https, :80 for http)";

/// Whether `origin` is a web origin as browsers send it in `Origin` and as a key may name it:
/// `https://host[:port]`, or `http://` for this machine's own names (a developer's page), lower
/// case, nothing after the port. A browser leaves out its scheme's default port, so an origin
/// naming it would never match a request.
pub fn is_key_origin(origin: &str) -> bool {
    if origin.len() > MAX_ORIGIN_LEN {
        return false;
    }
    let Some((scheme, authority)) = origin.split_once("://") else {
        return false;
    };
    // No host a key may name has a colon of its own (no IPv6 literal): the first one starts the port.
    let (host, port) = match authority.split_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (authority, None),
    };
    let (host_ok, default_port) = match scheme {
        "https" => (is_host_name(host) || host == "127.0.0.1", 443),
        "http" => (matches!(host, "localhost" | "127.0.0.1"), 80),
        _ => (false, 0),
    };
    let port_ok = port.is_none_or(|p| {
        !p.is_empty()
            && !p.starts_with('0')
            && p.len() <= 5
            && p.parse::<u16>().is_ok_and(|n| n > 0 && n != default_port)
    });
    port_ok && host_ok
}

/// A DNS name in lower case: dot-separated labels of letters, digits and inner hyphens.
fn is_host_name(host: &str) -> bool {
    !host.is_empty()
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_one_to_a_hundred_characters() {
        assert!(label_problem("Main shop").is_none());
        assert!(label_problem(&"я".repeat(100)).is_none());
        assert!(label_problem(&"я".repeat(101)).is_some());
        assert!(label_problem("").is_some());
    }

    #[test]
    fn origins_are_what_a_browser_sends() {
        for good in [
            "https://shop.example",
            "https://shop.example:8443",
            "https://xn--80ak6aa92e.xn--p1ai",
            "http://localhost",
            "http://localhost:3000",
            "http://127.0.0.1:8080",
            "https://127.0.0.1",
            "https://shop.example:80",
            "http://localhost:443",
        ] {
            assert!(is_key_origin(good), "{good}");
        }
        for bad in [
            "",
            "shop.example",
            "https://",
            "https://Shop.example",
            "https://shop.example/",
            "https://shop.example/checkout",
            "https://shop.example?x=1",
            "https://shop.example:",
            "https://shop.example:0",
            "https://shop.example:65536",
            "https://shop.example:08080",
            "https://shop.example:443",
            "http://localhost:80",
            "http://shop.example",
            "ftp://shop.example",
            "https://user@shop.example",
            "https://shop..example",
            "https://-shop.example",
            "https://*.example",
            "null",
            "http://10.0.0.1",
        ] {
            assert!(!is_key_origin(bad), "{bad}");
        }
        assert!(!is_key_origin(&format!("https://{}.example", "a".repeat(300))));
    }
}
