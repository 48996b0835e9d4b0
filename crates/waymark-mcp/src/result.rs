//! A server's tool result as the model reads it: text as is, images and audio in one line
//! each, embedded resources and links as text with their URI, `structuredContent` as JSON.
//! The engine then redacts and cuts it like any tool's output. Images that are what they say
//! they are also go beside the text, for models that take images.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// What a call gave: the text for the model, and whether the server called it an error.
#[derive(Debug, Clone, PartialEq)]
pub struct Shaped {
    pub text: String,
    pub is_error: bool,
    /// The images passed on (each also has its line in `text`).
    pub images: Vec<waymark_protocol::ToolImage>,
}

/// Why an image is not passed on, or `None` when it is fit: a type providers take, within
/// the size limit, valid base64 whose first bytes are that type's signature (a server that
/// lies about an image must not make every later model call fail).
fn unfit(mime: &str, data: &str, kept: usize) -> Option<String> {
    use waymark_protocol::{IMAGE_TYPES, MAX_IMAGE_BASE64, MAX_IMAGES};
    if !IMAGE_TYPES.contains(&mime) {
        return Some("a type models do not take".into());
    }
    if kept >= MAX_IMAGES {
        return Some(format!(
            "only the first {MAX_IMAGES} images of a result are"
        ));
    }
    if data.len() > MAX_IMAGE_BASE64 {
        return Some(format!("over the {} limit", size(MAX_IMAGE_BASE64 / 4 * 3)));
    }
    let valid = data.len().is_multiple_of(4)
        && data.bytes().enumerate().all(|(i, b)| {
            b.is_ascii_alphanumeric()
                || b == b'+'
                || b == b'/'
                || (b == b'=' && i + 2 >= data.len())
        });
    let head = valid.then(|| decode_head(data)).flatten();
    let signed = head.as_ref().is_some_and(|h| match mime {
        "image/png" => h.starts_with(b"\x89PNG\r\n\x1a\n") && h.get(12..16) == Some(b"IHDR"),
        "image/jpeg" => h.starts_with(&[0xff, 0xd8, 0xff]),
        "image/gif" => h.starts_with(b"GIF87a") || h.starts_with(b"GIF89a"),
        "image/webp" => h.starts_with(b"RIFF") && h.get(8..12) == Some(b"WEBP"),
        _ => false,
    });
    if !signed {
        return Some(format!("its data is not a {mime} image"));
    }
    // Providers refuse a side over 8000 pixels, and would then refuse every later request
    // that carries it: read from the header where the type puts it there.
    let side = head.and_then(|h| match mime {
        "image/png" => Some((
            u32::from_be_bytes(h.get(16..20)?.try_into().ok()?),
            u32::from_be_bytes(h.get(20..24)?.try_into().ok()?),
        )),
        "image/gif" => Some((
            u32::from(u16::from_le_bytes(h.get(6..8)?.try_into().ok()?)),
            u32::from(u16::from_le_bytes(h.get(8..10)?.try_into().ok()?)),
        )),
        _ => None,
    });
    match side {
        Some((w, h)) if w == 0 || h == 0 || w > MAX_SIDE || h > MAX_SIDE => {
            Some(format!("{w}×{h} pixels, over {MAX_SIDE} a side"))
        }
        _ => None,
    }
}

/// The longest side of an image passed on, in pixels.
pub const MAX_SIDE: u32 = 8000;

/// The first 24 bytes of base64 `data` (its first 32 characters; fewer if it is shorter).
fn decode_head(data: &str) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return None,
        } as u32)
    };
    // Whole groups before any padding.
    let n = data.find('=').unwrap_or(data.len()).min(32) / 4 * 4;
    let head = data.as_bytes().get(..n).filter(|h| h.len() >= 16)?;
    let mut out = Vec::with_capacity(24);
    for quad in head.chunks(4) {
        let n = quad
            .iter()
            .try_fold(0u32, |acc, &c| Some(acc << 6 | value(c)?))?;
        out.extend_from_slice(&[(n >> 16) as u8, (n >> 8) as u8, n as u8]);
    }
    Some(out)
}

/// The base64 text of `n` characters holds about this many bytes.
fn decoded_len(b64: &str) -> usize {
    b64.len() / 4 * 3
}

fn size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1} KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1} MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

/// A resource's contents as text: its URI, then its text, or one line for binary content.
pub fn resource_text(r: &ResourceContents) -> String {
    match r {
        ResourceContents::TextResourceContents { uri, text, .. } => {
            format!("[resource {uri}]\n{text}")
        }
        ResourceContents::BlobResourceContents {
            uri,
            mime_type,
            blob,
            ..
        } => format!(
            "[resource {uri}: {}, {}]",
            mime_type.as_deref().unwrap_or("binary"),
            size(decoded_len(blob))
        ),
        _ => "[resource of a kind Waymark does not know]".into(),
    }
}

/// Shapes `r`. A result with nothing in it says so, so the model never reads an empty
/// success as a missing answer.
pub fn shape(r: &CallToolResult) -> Shaped {
    let mut parts: Vec<String> = Vec::new();
    let mut images = Vec::new();
    for block in &r.content {
        parts.push(match block {
            ContentBlock::Text(t) => t.text.clone(),
            ContentBlock::Image(i) => {
                let line = format!(
                    "[image: {}, {}",
                    waymark_protocol::display::escape_line(&i.mime_type),
                    size(decoded_len(&i.data))
                );
                match unfit(&i.mime_type, &i.data, images.len()) {
                    None => {
                        images.push(waymark_protocol::ToolImage {
                            mime: i.mime_type.clone(),
                            data: i.data.clone(),
                        });
                        format!("{line}]")
                    }
                    Some(why) => format!("{line}; not passed on: {why}]"),
                }
            }
            ContentBlock::Audio(a) => format!(
                "[audio: {}, {}]",
                waymark_protocol::display::escape_line(&a.mime_type),
                size(decoded_len(&a.data))
            ),
            ContentBlock::Resource(e) => resource_text(&e.resource),
            ContentBlock::ResourceLink(l) => match &l.description {
                Some(d) => format!("[link {} ({}): {d}]", l.uri, l.name),
                None => format!("[link {} ({})]", l.uri, l.name),
            },
            _ => "[content of a kind Waymark does not know]".into(),
        });
    }
    if let Some(s) = &r.structured_content {
        let json = serde_json::to_string_pretty(s).unwrap_or_else(|_| s.to_string());
        // Servers often send the same JSON as text too: said once.
        let same = |p: &String| serde_json::from_str::<serde_json::Value>(p).is_ok_and(|v| &v == s);
        if !parts.iter().any(same) {
            parts.push(json);
        }
    }
    let is_error = r.is_error.unwrap_or(false);
    let mut text = parts.join("\n");
    if text.is_empty() {
        text = if is_error {
            "the tool failed and said nothing more".into()
        } else {
            "(the tool returned nothing)".into()
        };
    }
    Shaped {
        text,
        is_error,
        images,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: serde_json::Value) -> CallToolResult {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn each_kind_of_content_reads_as_text() {
        let r = parse(json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                {"type": "resource", "resource": {"uri": "test://a", "text": "inside"}},
                {"type": "resource_link", "uri": "test://b", "name": "b"}
            ]
        }));
        let s = shape(&r);
        assert!(!s.is_error);
        assert_eq!(
            s.text,
            "hello\n[image: image/png, 3 B; not passed on: its data is not a image/png image]\n[resource test://a]\ninside\n[link test://b (b)]"
        );
        assert!(s.images.is_empty());
    }

    /// Only images that are what they say pass on: a hostile server's fake PNG, an unknown
    /// type or a fifth image is only described.
    #[test]
    fn only_true_images_within_the_limits_pass_on() {
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
        let img = |mime: &str, data: &str| json!({"type": "image", "data": data, "mimeType": mime});
        let r = parse(json!({"content": [
            img("image/png", png),
            img("image/png", "R0lGODlhAQABAAAAACw="),
            img("image/tiff", png),
            img("image/png", "not base64!!"),
            img("image/png", png), img("image/png", png), img("image/png", png), img("image/png", png),
        ]}));
        let s = shape(&r);
        assert_eq!(s.images.len(), 4, "{}", s.text);
        assert_eq!(s.images[0].data, png);
        assert!(
            s.text.contains("its data is not a image/png image"),
            "{}",
            s.text
        );
        assert!(s.text.contains("a type models do not take"), "{}", s.text);
        assert!(s.text.contains("only the first 4"), "{}", s.text);
        assert_eq!(
            decode_head("R0lGODlhAQABAAAAACw=").unwrap()[..6],
            *b"GIF89a"
        );
        // A true PNG header that claims 9000×1 pixels (a provider would refuse it).
        let mut wide = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
        wide.extend(9000u32.to_be_bytes());
        wide.extend(1u32.to_be_bytes());
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let b64: String = wide
            .chunks(3)
            .flat_map(|c| {
                let n = u32::from(c[0]) << 16
                    | u32::from(*c.get(1).unwrap_or(&0)) << 8
                    | u32::from(*c.get(2).unwrap_or(&0));
                (0..4).map(move |i| A[(n >> (18 - 6 * i) & 63) as usize] as char)
            })
            .collect();
        let why = unfit("image/png", &b64, 0).unwrap();
        assert!(why.contains("9000×1"), "{why}");
        assert_eq!(unfit("image/png", png, 0), None);
    }

    #[test]
    fn structured_content_is_json_once_and_errors_are_errors() {
        let r = parse(json!({
            "content": [{"type": "text", "text": "{\"sum\":3,\"a\":1}"}],
            "structuredContent": {"a": 1, "sum": 3}
        }));
        assert_eq!(shape(&r).text, "{\"sum\":3,\"a\":1}");
        let r = parse(json!({"content": [], "structuredContent": {"sum": 3}}));
        assert_eq!(shape(&r).text, "{\n  \"sum\": 3\n}");
        let r = parse(json!({"content": [], "isError": true}));
        let s = shape(&r);
        assert!(s.is_error);
        assert!(s.text.contains("failed"));
    }
}
