//! Only public addresses (OWASP API7, server-side request forgery): the endpoint URLs a merchant may register,
//! and the addresses an attempt may connect to.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use reqwest::Url;

use crate::domain::webhook::MAX_URL_CHARS;

/// Why an address is not a public unicast one, or `None` when it is.
pub fn refused(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => {
            // An IPv4 address written in IPv6 (mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96, the old
            // compatible ::a.b.c.d, or a 6to4 2002:a.b.c.d::/48, which a host with a 6to4 tunnel
            // sends to that IPv4 address) is the IPv4 address it carries.
            let s = v6.segments();
            let v4 = |high: u16, low: u16| Ipv4Addr::new((high >> 8) as u8, high as u8, (low >> 8) as u8, low as u8);
            let embedded = v6.to_ipv4_mapped().or_else(|| {
                let nat64 = s[0] == 0x64 && s[1] == 0xff9b && s[2..6].iter().all(|x| *x == 0);
                let compatible = s[..6].iter().all(|x| *x == 0) && !v6.is_loopback() && !v6.is_unspecified();
                if nat64 || compatible {
                    Some(v4(s[6], s[7]))
                } else {
                    (s[0] == 0x2002).then(|| v4(s[1], s[2]))
                }
            });
            match embedded {
                Some(v4) => refused_v4(v4),
                None => refused_v6(v6),
            }
        }
    }
}

fn refused_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    Some(if ip.is_loopback() {
        "a loopback address"
    } else if ip.is_private() {
        "a private address"
    } else if ip.is_link_local() {
        "a link-local address (such as the cloud metadata address)"
    } else if a == 100 && (64..128).contains(&b) {
        "a shared address (100.64.0.0/10)"
    } else if ip.is_unspecified() || a == 0 {
        "an unspecified address"
    } else if ip.is_multicast() {
        "a multicast address"
    } else if ip.is_broadcast() || a >= 240 {
        "a broadcast or reserved address"
    } else {
        return None;
    })
}

fn refused_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let first = ip.segments()[0];
    Some(if ip.is_loopback() {
        "a loopback address"
    } else if ip.is_unspecified() {
        "an unspecified address"
    } else if first & 0xfe00 == 0xfc00 {
        "a private address (fc00::/7)"
    } else if first & 0xffc0 == 0xfe80 {
        "a link-local address"
    } else if first & 0xffc0 == 0xfec0 {
        "a site-local address (fec0::/10)"
    } else if ip.is_multicast() {
        "a multicast address"
    } else {
        return None;
    })
}

/// What the service may do with endpoint URLs (`--webhook-allow-http`, `--webhook-allow-private`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Reach {
    pub allow_http: bool,
    pub allow_private: bool,
}

/// An endpoint URL as a merchant may register it, or why not.
pub fn check_url(text: &str, reach: Reach) -> Result<Url, String> {
    if text.chars().count() > MAX_URL_CHARS {
        return Err(format!("url must be at most {MAX_URL_CHARS} characters"));
    }
    let url = Url::parse(text).map_err(|e| format!("url must be an absolute URL: {e}"))?;
    match url.scheme() {
        "https" => {}
        "http" if reach.allow_http => {}
        _ if reach.allow_http => return Err("url must be an https:// or http:// URL".into()),
        "http" => {
            return Err("url must be an https:// URL (the service's operator can allow http:// \
                        with --webhook-allow-http)"
                .into());
        }
        _ => return Err("url must be an https:// URL".into()),
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("url must not hold a user name or password".into());
    }
    if url.fragment().is_some() {
        return Err("url must not have a fragment (#...)".into());
    }
    if url.port() == Some(0) {
        return Err("url must not name port 0: no receiver can listen on it".into());
    }
    let ip = match url.host() {
        None => return Err("url must name a host".into()),
        Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
        Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
        Some(url::Host::Domain(_)) => None,
    };
    if let Some(why) = ip.and_then(refused).filter(|_| !reach.allow_private) {
        return Err(format!(
            "url must reach a public address, not {why} (the service's operator can allow the \
             addresses of its own network with --webhook-allow-private)"
        ));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_non_public_address_is_refused_in_every_form() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:10.0.0.1",
            "64:ff9b::7f00:1",
            "::127.0.0.1",
            "2002:7f00:1::",
            "2002:a9fe:a9fe::1",
            "2002:c0a8:101::",
            "fec0::1",
        ] {
            let parsed: IpAddr = ip.parse().unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
            assert!(refused(parsed).is_some(), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:2800:220:1:248:1893:25c8:1946",
            "::ffff:8.8.8.8",
            "100.128.0.1",
            "2002:808:808::1",
        ] {
            let parsed: IpAddr = ip.parse().unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST));
            assert_eq!(refused(parsed), None, "{ip}");
        }
    }

    #[test]
    fn urls_are_absolute_https_without_credentials_or_fragment() {
        let strict = Reach::default();
        assert!(check_url("https://hooks.example.com/in?x=1", strict).is_ok());
        for bad in [
            "hooks.example.com/in",
            "http://hooks.example.com/in",
            "ftp://hooks.example.com/",
            "https://user:pw@hooks.example.com/",
            "https://hooks.example.com/#frag",
            "https://127.0.0.1/",
            "https://[::1]/",
            "https://[::ffff:127.0.0.1]/",
            "https://169.254.169.254/latest/meta-data",
            "https://[2002:7f00:1::]/",
            "https://hooks.example.com:0/in",
        ] {
            assert!(check_url(bad, strict).is_err(), "{bad}");
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_CHARS));
        assert!(check_url(&long, strict).is_err());
        let open = Reach {
            allow_http: true,
            allow_private: true,
        };
        assert!(check_url("http://127.0.0.1:9000/", open).is_ok());
    }
}
