//! Database URLs as logs and messages may show them: never a password.

/// The URL with any password replaced, for messages and logs: the one of `user:pass@` and the
/// value of every query parameter whose name holds `password` (`?password=`, `&sslpassword=`).
pub fn redact(url: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let mut out = match (base.find("://"), base.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            let credentials = &base[scheme_end + 3..at];
            match credentials.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &base[..scheme_end + 3], &base[at..]),
                None => base.to_owned(),
            }
        }
        _ => base.to_owned(),
    };
    if let Some(query) = query {
        let params: Vec<String> = query
            .split('&')
            .map(|param| match param.split_once('=') {
                Some((name, _)) if name.to_ascii_lowercase().contains("password") => format!("{name}=***"),
                _ => param.to_owned(),
            })
            .collect();
        out.push('?');
        out.push_str(&params.join("&"));
    }
    out
}
