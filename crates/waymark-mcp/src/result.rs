//! A server's tool result as the model reads it: text as is, images and audio in one line
//! each, embedded resources and links as text with their URI, `structuredContent` as JSON.
//! The engine then redacts and cuts it like any tool's output. Images that decode go beside
//! the text too, for models that take images, scaled down when too big (`crate::image`).

use crate::image::Fitted;
use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// What a call gave: the text for the model, and whether the server called it an error.
#[derive(Debug, Clone, PartialEq)]
pub struct Shaped {
    pub text: String,
    pub is_error: bool,
    /// The images passed on (each also has its line in `text`).
    pub images: Vec<waymark_protocol::ToolImage>,
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
                let fitted = if images.len() >= waymark_protocol::MAX_IMAGES {
                    Fitted::Described(format!(
                        "only the first {} images of a result are",
                        waymark_protocol::MAX_IMAGES
                    ))
                } else {
                    crate::image::fit(&i.mime_type, &i.data)
                };
                match fitted {
                    Fitted::AsSent(image) => {
                        images.push(image);
                        format!("{line}]")
                    }
                    Fitted::Scaled {
                        image,
                        from: (w, h),
                    } => {
                        let said = format!(
                            "{line}; {w}×{h} pixels, passed on scaled down as {}, {}]",
                            image.mime,
                            size(decoded_len(&image.data))
                        );
                        images.push(image);
                        said
                    }
                    Fitted::Described(why) => format!("{line}; not passed on: {why}]"),
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
        // A real image wider than a provider takes passes on scaled down, and says so.
        let wide = waymark_extension::tools::image::test_picture(2600, 10, image::ImageFormat::Png);
        let s = shape(&parse(
            json!({"content": [{"type": "image", "data": wide, "mimeType": "image/png"}]}),
        ));
        assert_eq!(s.images.len(), 1, "{}", s.text);
        assert!(
            s.text
                .contains("2600×10 pixels, passed on scaled down as image/png"),
            "{}",
            s.text
        );
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
