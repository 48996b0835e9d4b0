//! The models a server offers, for the setup card to pick from: OpenAI's `GET /models` (and
//! every compatible server's), Anthropic's `GET /v1/models` and Ollama's `GET /api/tags`,
//! read as untrusted text. Each name is checked before it reaches the window: a name with a
//! control, format or bidi character is left out (it would read as something else), as is one
//! too long to be a model's name; at most [`MAX_MODELS`] are kept, sorted, each once.

use super::{ProviderError, ProviderErrorKind};
use serde_json::Value;

/// The most names kept from one listing.
pub const MAX_MODELS: usize = 1000;
/// The longest name kept, in characters.
const MAX_NAME: usize = 200;

/// How a server lists its models.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listing {
    /// `{"data": [{"id": "…"}, …]}`: OpenAI, the compatible servers and Anthropic.
    Data,
    /// `{"models": [{"name": "…"}, …]}`: Ollama's own API.
    Tags,
}

/// The names in a listing `body` from `url`, checked (see the module's docs).
pub(crate) fn parse(body: &str, listing: Listing, url: &str) -> Result<Vec<String>, ProviderError> {
    let bad =
        |what: &str| ProviderError::bad_response(format!("{url} did not list models: {what}"));
    let v: Value = serde_json::from_str(body).map_err(|e| bad(&format!("not JSON ({e})")))?;
    let (field, key) = match listing {
        Listing::Data => ("data", "id"),
        Listing::Tags => ("models", "name"),
    };
    let entries = v
        .get(field)
        .and_then(Value::as_array)
        .ok_or_else(|| bad(&format!("no `{field}` list")))?;
    let mut names: Vec<String> = entries
        .iter()
        .filter_map(|e| e.get(key).and_then(Value::as_str))
        .map(str::trim)
        .filter(|n| plain_name(n))
        .map(str::to_string)
        .collect();
    names.sort();
    names.dedup();
    names.truncate(MAX_MODELS);
    Ok(names)
}

/// Whether `name` may be shown as a model's name: not empty, not too long, and free of
/// control, format (bidi, zero-width) and other invisible characters.
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.chars().count() <= MAX_NAME
        && !name
            .chars()
            .any(|c| c.is_whitespace() || waymark_protocol::display::needs_escape(c))
}

/// Whether `e` is the server's 404: the prefix our own message gives it, which no text of the
/// server's can forge (the server's words come after it).
pub(crate) fn not_found(e: &ProviderError) -> bool {
    e.kind == ProviderErrorKind::RequestRejected
        && e.message
            .starts_with("the provider rejected the request (HTTP 404)")
}

/// Ollama's own listing beside an OpenAI-compatible address that ends in a `v1` folder
/// (`http://host:11434/v1` → `http://host:11434/api/tags`): the same scheme, host and port,
/// so the key never goes anywhere else; none for any other address.
pub(crate) fn tags_url(base: &str) -> Option<String> {
    let mut url = reqwest::Url::parse(base).ok()?;
    let (scheme, host, port) = (
        url.scheme().to_string(),
        url.host_str()?.to_string(),
        url.port(),
    );
    let mut segments: Vec<String> = url.path_segments()?.map(str::to_string).collect();
    if segments.last().map(String::as_str) == Some("") {
        segments.pop();
    }
    if segments.pop().as_deref() != Some("v1") {
        return None;
    }
    segments.extend(["api".to_string(), "tags".to_string()]);
    url.set_path(&segments.join("/"));
    (url.scheme() == scheme && url.host_str() == Some(host.as_str()) && url.port() == port)
        .then(|| url.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ollama's listing stays on the address the user typed: same scheme, host and port.
    #[test]
    fn the_tags_listing_is_on_the_same_server_or_not_asked() {
        for (base, tags) in [
            (
                "http://localhost:11434/v1",
                Some("http://localhost:11434/api/tags"),
            ),
            (
                "http://127.0.0.1:8/v1/",
                Some("http://127.0.0.1:8/api/tags"),
            ),
            (
                "https://gw.example/ollama/v1",
                Some("https://gw.example/ollama/api/tags"),
            ),
            // The host is `v1`: cutting text would have asked `http://api/tags`.
            ("http://v1", None),
            ("http://v1/", None),
            ("http://host/v2", None),
            ("http://host/", None),
            ("not a url", None),
        ] {
            assert_eq!(tags_url(base).as_deref(), tags, "{base}");
        }
        let forged = ProviderError::new(
            ProviderErrorKind::RequestRejected,
            "the provider rejected the request (HTTP 400): HTTP 404",
        );
        assert!(!not_found(&forged));
        let real = ProviderError::new(
            ProviderErrorKind::RequestRejected,
            "the provider rejected the request (HTTP 404): 404 page not found",
        );
        assert!(not_found(&real));
    }

    #[test]
    fn a_listing_is_read_sorted_and_once() {
        let body = r#"{"object":"list","data":[{"id":"gpt-4.1"},{"id":"gpt-4.1-mini"},{"id":"gpt-4.1"},{"id":"  o3  "}]}"#;
        assert_eq!(
            parse(body, Listing::Data, "u").unwrap(),
            ["gpt-4.1", "gpt-4.1-mini", "o3"]
        );
        let tags = r#"{"models":[{"name":"qwen3:8b","size":1},{"name":"llama3.2:latest"}]}"#;
        assert_eq!(
            parse(tags, Listing::Tags, "u").unwrap(),
            ["llama3.2:latest", "qwen3:8b"]
        );
    }

    /// A hostile server: names that would read as something else, absurd lengths and counts,
    /// entries of the wrong type, and bodies that are not a listing at all.
    #[test]
    fn a_hostile_listing_shows_nothing_that_could_mislead() {
        let rlo = "gpt\u{202e}1.4";
        let zw = "gpt\u{200b}-4.1";
        let body = serde_json::json!({"data": [
            {"id": rlo}, {"id": zw}, {"id": "a\nb"}, {"id": "esc\u{1b}[2J"}, {"id": "x".repeat(201)},
            {"id": 42}, {"name": "no-id"}, "loose", {"id": ""}, {"id": "a b"}, {"id": "ok-model"}
        ]})
        .to_string();
        assert_eq!(parse(&body, Listing::Data, "u").unwrap(), ["ok-model"]);
        let many: Vec<_> = (0..5000)
            .map(|i| serde_json::json!({"id": format!("m{i:05}")}))
            .collect();
        let body = serde_json::json!({ "data": many }).to_string();
        let names = parse(&body, Listing::Data, "u").unwrap();
        assert_eq!(names.len(), MAX_MODELS);
        assert_eq!(names[0], "m00000");
        for (body, what) in [
            ("<html>nope</html>", "not JSON"),
            (r#"{"data": "x"}"#, "no `data` list"),
            (r#"{"models": []}"#, "no `data` list"),
        ] {
            let e = parse(body, Listing::Data, "http://h/models").unwrap_err();
            assert_eq!(e.kind, ProviderErrorKind::BadResponse);
            assert!(
                e.message.contains(what) && e.message.contains("http://h/models"),
                "{e:?}"
            );
        }
    }
}
