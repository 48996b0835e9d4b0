//! Links that may leave the app: what a rendered plan or reply links to and what the desktop
//! hands the system to open. `mailto:` links keep only the fields that fill in a message
//! (`subject`, `body`, `cc`, `bcc`): a mail client may act on others, and some attach a
//! local file named by `attach=` (a plan could have the user mail `~/.ssh/id_ed25519` away).

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};

/// The fields a `mailto:` link keeps.
pub const MAILTO_FIELDS: &[&str] = &["subject", "body", "cc", "bcc"];

/// Characters written as they are in a rebuilt `mailto:` address list: those addresses use.
const ADDRESS: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'@')
    .remove(b'.')
    .remove(b'-')
    .remove(b'_')
    .remove(b'+')
    .remove(b',');

/// Characters written as they are in a rebuilt field value: the unreserved ones only, so no
/// `&`, `?`, `=` or `;` a client could split on again.
const VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'.')
    .remove(b'-')
    .remove(b'_')
    .remove(b'~');

/// `url` as a `mailto:` link may be opened: rebuilt from its addresses and the fields of
/// [`MAILTO_FIELDS`] (each decoded and written again, in the order given), every other field
/// dropped. `None` when `url` is not a `mailto:` link, or when its addresses or fields do not
/// decode to text without control characters.
pub fn safe_mailto(url: &str) -> Option<String> {
    let (scheme, rest) = url.split_once(':')?;
    if !scheme.eq_ignore_ascii_case("mailto") {
        return None;
    }
    // A fragment is not part of a message.
    let rest = rest.split('#').next().unwrap_or("");
    let (to, query) = rest.split_once('?').unwrap_or((rest, ""));
    let decode = |s: &str| -> Option<String> {
        let text = percent_decode_str(s).decode_utf8().ok()?.into_owned();
        (!text.chars().any(char::is_control)).then_some(text)
    };
    let to = decode(to)?;
    // An address list holds no query of its own (`%3F` decoding to `?`).
    if to.contains(['?', '&', '=', ';']) {
        return None;
    }
    let mut out = format!("mailto:{}", utf8_percent_encode(&to, ADDRESS));
    let mut first = true;
    // `;` separates fields for some clients: split there too, so none hides in a value.
    for pair in query.split(['&', ';']).filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let key = decode(key)?.to_ascii_lowercase();
        if !MAILTO_FIELDS.contains(&key.as_str()) {
            continue;
        }
        let value = decode(value)?;
        out.push(if first { '?' } else { '&' });
        first = false;
        out.push_str(&key);
        out.push('=');
        out.extend(utf8_percent_encode(&value, VALUE));
    }
    Some(out)
}

/// What the system may be asked to open for a link the user clicked: an `http(s)` address as
/// it is, a `mailto:` link as [`safe_mailto`] rebuilds it; `None` for anything else (or a
/// link holding control characters).
pub fn to_open(url: &str) -> Option<String> {
    if url.chars().any(char::is_control) {
        return None;
    }
    let (scheme, rest) = url.split_once(':')?;
    match scheme.to_ascii_lowercase().as_str() {
        "http" | "https" if rest.starts_with("//") => Some(url.to_string()),
        "mailto" => safe_mailto(url),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_web_and_mail_links_open_and_mail_links_lose_their_attachments() {
        assert_eq!(
            to_open("https://example.invalid/a?b=c").as_deref(),
            Some("https://example.invalid/a?b=c")
        );
        assert_eq!(
            to_open("mailto:x@evil.invalid?attach=%2Fetc%2Fpasswd&subject=s").as_deref(),
            Some("mailto:x@evil.invalid?subject=s")
        );
        for refused in [
            "file:///etc/passwd",
            "javascript:alert(1)",
            "https:evil",
            "https://example.invalid/\nx",
            "smb://host/share",
        ] {
            assert_eq!(to_open(refused), None, "{refused}");
        }
    }

    #[test]
    fn a_mailto_link_keeps_only_the_fields_of_a_message() {
        assert_eq!(
            safe_mailto("mailto:dev@example.invalid?subject=Hi%20there&attach=/etc/passwd&body=x")
                .as_deref(),
            Some("mailto:dev@example.invalid?subject=Hi%20there&body=x")
        );
        // Every spelling of the field the red-team used: case, encoding, `;`, repeats.
        for hostile in [
            "mailto:a@b.invalid?ATTACH=~/.ssh/id_ed25519",
            "MAILTO:a@b.invalid?%61ttach=~/.ssh/id_ed25519",
            "mailto:a@b.invalid?subject=x;attach=/etc/shadow",
            "mailto:a@b.invalid?attachment=file:///etc/passwd&attach=a&Attach=b",
            "mailto:a@b.invalid?subject=ok?attach=/etc/passwd",
            "mailto:a@b.invalid?body=one%26attach%3D%2Fetc%2Fpasswd",
        ] {
            let safe = safe_mailto(hostile).unwrap();
            let lower = safe.to_ascii_lowercase();
            assert!(
                !lower.contains("attach=") && !lower.contains("&attach"),
                "{hostile} -> {safe}"
            );
        }
        assert_eq!(
            safe_mailto("mailto:a@b.invalid?subject=ok?attach=/etc/passwd").as_deref(),
            Some("mailto:a@b.invalid?subject=ok%3Fattach%3D%2Fetc%2Fpasswd")
        );
        assert_eq!(
            safe_mailto("mailto:a@b.invalid,c@d.invalid?CC=e@f.invalid#x").as_deref(),
            Some("mailto:a@b.invalid,c@d.invalid?cc=e%40f.invalid")
        );
        // An address that decodes into a query, control characters, not UTF-8, not mailto.
        for bad in [
            "mailto:a%3Fattach=%2Fetc%2Fpasswd@b.invalid",
            "mailto:a@b.invalid?subject=%0d%0aBcc:x@y",
            "mailto:a@b.invalid?subject=%ff",
            "https://example.invalid/?attach=x",
            "mailto",
        ] {
            assert_eq!(safe_mailto(bad), None, "{bad}");
        }
    }
}
