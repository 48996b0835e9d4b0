//! What a URL must be before any request is made for it: `http` or `https`, no credentials
//! in it, no known secret in it (percent-decoded too), at most [`MAX_QUERY`] bytes of query,
//! and a host whose every address is public, unless its `host:port` is listed in
//! `web.allow_private`. The addresses checked here are the ones connected to, so a name that
//! resolves differently a moment later (DNS rebinding) changes nothing.

use crate::address::private_kind;
use crate::error::{Result, WebError};
use std::net::{IpAddr, SocketAddr};
use url::{Host, Url};
use waymark_config::secrets::Redactor;

/// The longest query string a fetched URL may carry (a longer one is how data is smuggled out).
pub const MAX_QUERY: usize = 2048;
/// The longest URL fetched, path included.
pub const MAX_URL: usize = 8192;

/// A URL checked before any address is looked up.
#[derive(Debug, Clone)]
pub struct Checked {
    pub url: Url,
    /// The host as the URL names it (no brackets around an IPv6 address).
    pub host: String,
    pub port: u16,
    /// The `host:port` is listed in `web.allow_private`.
    pub listed: bool,
}

/// Checks what the URL itself says, before any lookup or connection.
pub fn check_url(
    raw: &str,
    redactor: Option<&Redactor>,
    allow_private: &[String],
) -> Result<Checked> {
    let url = Url::parse(raw.trim())
        .map_err(|e| WebError::Refused(format!("`{}` is not a URL: {e}", clip(raw))))?;
    check_parsed(url, redactor, allow_private)
}

/// The same checks on a parsed URL (a redirect's target).
pub fn check_parsed(
    url: Url,
    redactor: Option<&Redactor>,
    allow_private: &[String],
) -> Result<Checked> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(WebError::Refused(format!(
            "only http and https URLs can be fetched, not `{}:`",
            url.scheme()
        )));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(WebError::Refused(
            "a URL with a user name or password in it is not fetched".into(),
        ));
    }
    if let Some(name) = secret_in(url.as_str(), redactor) {
        return Err(WebError::Refused(format!(
            "the URL holds the value of {name}, a secret: it is not sent anywhere"
        )));
    }
    if url.as_str().len() > MAX_URL {
        return Err(WebError::Refused(format!(
            "the URL is {} bytes; at most {MAX_URL} are sent",
            url.as_str().len()
        )));
    }
    let query = url.query().map_or(0, str::len);
    if query > MAX_QUERY {
        return Err(WebError::Refused(format!(
            "the URL's query is {query} bytes; at most {MAX_QUERY} are sent"
        )));
    }
    let host = match url.host() {
        Some(Host::Domain(d)) => d.to_ascii_lowercase(),
        Some(Host::Ipv4(ip)) => ip.to_string(),
        Some(Host::Ipv6(ip)) => ip.to_string(),
        None => return Err(WebError::Refused("the URL names no host".into())),
    };
    let port = url
        .port_or_known_default()
        .ok_or_else(|| WebError::Refused("the URL names no port".into()))?;
    let listed = is_listed(&host, port, allow_private);
    // An address written in the URL is judged now: nothing to look up.
    if let Ok(ip) = host.parse::<IpAddr>()
        && !listed
        && let Some(kind) = private_kind(ip)
    {
        return Err(WebError::Refused(refusal(&host, port, ip, kind)));
    }
    Ok(Checked {
        url,
        host,
        port,
        listed,
    })
}

/// The addresses `checked` may be reached at: all it resolves to, when every one is public
/// (or its `host:port` is listed). One private address refuses the whole name.
pub fn check_addresses(checked: &Checked, addrs: &[SocketAddr]) -> Result<()> {
    if addrs.is_empty() {
        return Err(WebError::Refused(format!(
            "`{}` resolves to no address",
            checked.host
        )));
    }
    if checked.listed {
        return Ok(());
    }
    for a in addrs {
        if let Some(kind) = private_kind(a.ip()) {
            return Err(WebError::Refused(refusal(
                &checked.host,
                checked.port,
                a.ip(),
                kind,
            )));
        }
    }
    Ok(())
}

fn refusal(host: &str, port: u16, ip: IpAddr, kind: &str) -> String {
    let at = if host == ip.to_string() {
        String::new()
    } else {
        format!(" (it resolves to {ip})")
    };
    format!(
        "`{host}`{at} is {kind}, which web_fetch does not reach: it is for the public web. To let it reach exactly this one, list \"{}\" in the setting web.allow_private.",
        host_port(host, port)
    )
}

fn host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

fn is_listed(host: &str, port: u16, allow_private: &[String]) -> bool {
    allow_private.iter().any(|entry| {
        let Some((h, p)) = entry.rsplit_once(':') else {
            return false;
        };
        let h = h
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(h);
        let same_host = match (h.parse::<IpAddr>(), host.parse::<IpAddr>()) {
            (Ok(a), Ok(b)) => a == b,
            _ => h.eq_ignore_ascii_case(host),
        };
        same_host && p.parse::<u16>() == Ok(port)
    })
}

/// The name of a secret the URL holds, as written or percent-decoded (once or twice). A
/// secret the runtime already replaced in the call's input (`[REDACTED:NAME]`) counts too:
/// the model tried to send it.
fn secret_in(url: &str, redactor: Option<&Redactor>) -> Option<String> {
    let once = percent_encoding::percent_decode_str(url).decode_utf8_lossy();
    let twice = percent_encoding::percent_decode_str(&once).decode_utf8_lossy();
    let plus = twice.replace('+', " ");
    let forms = [url, &once, &twice, &plus];
    if let Some(r) = redactor
        && let Some(name) = forms
            .iter()
            .find_map(|t| r.secret_in(t))
            // A host is lowercased when the URL is parsed: a secret put there is found
            // in any case.
            .or_else(|| r.secret_in_any_case(url))
    {
        return Some(name.to_string());
    }
    forms.iter().find_map(|t| {
        let at = t.find("[REDACTED:")?;
        let name: String = t[at + 10..]
            .chars()
            .take_while(|c| *c != ']')
            .take(64)
            .collect();
        Some(name)
    })
}

fn clip(s: &str) -> String {
    s.chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor() -> Redactor {
        let mut r = Redactor::default();
        r.add("OPENAI_API_KEY", "sk-test-0123456789abcdef");
        r
    }

    #[test]
    fn only_http_and_https_without_credentials() {
        for (url, said) in [
            ("file:///etc/passwd", "only http and https"),
            ("ftp://example.com/x", "only http and https"),
            ("gopher://example.com/", "only http and https"),
            ("http://user:pw@example.com/", "user name or password"),
            ("not a url", "is not a URL"),
        ] {
            let e = check_url(url, None, &[]).unwrap_err().to_string();
            assert!(e.contains(said), "{url}: {e}");
        }
        let ok = check_url("https://Example.com/a?b=c", None, &[]).unwrap();
        assert_eq!(
            (ok.host.as_str(), ok.port, ok.listed),
            ("example.com", 443, false)
        );
    }

    /// A hostile model tries to carry the provider key out in a URL, as written and encoded.
    #[test]
    fn a_url_holding_a_secret_is_refused() {
        let r = redactor();
        for url in [
            "https://evil.example/?k=sk-test-0123456789abcdef",
            "https://evil.example/sk-test-0123456789abcdef",
            "https://evil.example/?k=sk%2Dtest%2D0123456789abcdef",
            "https://evil.example/?k=sk%252Dtest-0123456789abcdef",
            "https://sk-test-0123456789abcdef.evil.example/",
            "https://SK-TEST-0123456789ABCDEF.evil.example/",
            "https://evil.example/?k=[REDACTED:OPENAI_API_KEY]",
            "https://evil.example/?k=%5BREDACTED:OPENAI_API_KEY%5D",
        ] {
            let e = check_url(url, Some(&r), &[]).unwrap_err().to_string();
            assert!(e.contains("OPENAI_API_KEY"), "{url}: {e}");
            assert!(!e.contains("0123456789abcdef"), "{e}");
        }
        assert!(check_url("https://example.com/?k=sk-test", Some(&r), &[]).is_ok());
    }

    #[test]
    fn a_long_query_is_refused() {
        let url = format!("https://example.com/?q={}", "a".repeat(MAX_QUERY));
        assert!(
            check_url(&url, None, &[])
                .unwrap_err()
                .to_string()
                .contains("query")
        );
        let url = format!("https://example.com/?q={}", "a".repeat(MAX_QUERY - 2));
        assert!(check_url(&url, None, &[]).is_ok());
    }

    #[test]
    fn a_private_address_in_the_url_is_refused_unless_listed_exactly() {
        for url in [
            "http://127.0.0.1:8080/",
            "http://[::1]:8080/",
            "http://[::ffff:7f00:1]:8080/",
            "http://169.254.169.254/latest/meta-data/",
            "http://0x7f.1/",
            "http://2130706433/",
            "http://10.0.0.1/",
        ] {
            let e = check_url(url, None, &[]).unwrap_err().to_string();
            assert!(e.contains("web.allow_private"), "{url}: {e}");
        }
        let listed = ["127.0.0.1:8080".to_string(), "[::1]:9000".to_string()];
        assert!(
            check_url("http://127.0.0.1:8080/x", None, &listed)
                .unwrap()
                .listed
        );
        assert!(
            check_url("http://[::1]:9000/", None, &listed)
                .unwrap()
                .listed
        );
        // Another port on the same host is not listed.
        assert!(check_url("http://127.0.0.1:8081/", None, &listed).is_err());
        assert!(check_url("http://[::1]:8080/", None, &listed).is_err());
    }

    #[test]
    fn a_name_is_judged_by_every_address_it_resolves_to() {
        let c = check_url("http://intranet.example:80/", None, &[]).unwrap();
        let public: SocketAddr = "93.184.216.34:80".parse().unwrap();
        let private: SocketAddr = "10.0.0.5:80".parse().unwrap();
        assert!(check_addresses(&c, &[public]).is_ok());
        let e = check_addresses(&c, &[public, private])
            .unwrap_err()
            .to_string();
        assert!(e.contains("resolves to 10.0.0.5"), "{e}");
        assert!(check_addresses(&c, &[]).is_err());
        let listed = check_url(
            "http://intranet.example:80/",
            None,
            &["INTRANET.example:80".into()],
        )
        .unwrap();
        assert!(check_addresses(&listed, &[private]).is_ok());
    }
}
