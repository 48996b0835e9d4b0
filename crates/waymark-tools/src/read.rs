//! Read-only tools: read_file (regular files only, reading just the requested window) and
//! list_dir. The search tools are in `search.rs`.

use super::fs_policy::{open_regular, resolve_read};
use super::{Tool, ToolContext, ToolError, ToolOutput, blocking, parse_args, truncate_head};
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use std::path::Path;

const DEFAULT_LINES: usize = 2000;
const MAX_LINE_CHARS: usize = 2000;
const MAX_ENTRIES: usize = 1000;

/// Reads a text file with line numbers.
pub struct ReadFile;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadArgs {
    path: String,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
}

impl Tool for ReadFile {
    fn name(&self) -> &'static str {
        "read_file"
    }
    fn description(&self) -> &'static str {
        "Read a text file (lines come numbered; `offset` is the first line, 1-based, `limit` the number of lines, default 2000), or look at a PNG, JPEG, GIF or WebP image."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "path": {"type": "string", "description": "File path, relative to the workspace or absolute"},
            "offset": {"type": "integer", "minimum": 1},
            "limit": {"type": "integer", "minimum": 1}
        }, "required": ["path"]})
    }
    fn effects(&self) -> crate::Effects {
        crate::Effects::READS
    }
}

impl crate::FreeTool for ReadFile {
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let a: ReadArgs = parse_args(self.name(), args)?;
            let path = resolve_read(ctx, &a.path)?;
            let limit = ctx.output_limit;
            blocking(move || read_file(&path, &a, limit)).await
        })
    }
}

/// Bytes of one line kept before the rest of the line is skipped unread into memory.
const MAX_LINE_BYTES: usize = MAX_LINE_CHARS * 4;

/// One line from `r`: up to `keep` bytes of it (without the break) and whether it was
/// longer. `None` at the end of the file. Long lines are skipped in chunks, never held.
fn next_line(
    r: &mut impl std::io::BufRead,
    keep: usize,
    out: &mut Vec<u8>,
) -> std::io::Result<Option<bool>> {
    out.clear();
    let mut cut = false;
    let mut any = false;
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(any.then_some(cut));
        }
        any = true;
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        let room = keep.saturating_sub(out.len());
        if chunk.len() > room {
            cut = true;
        }
        out.extend_from_slice(&chunk[..chunk.len().min(room)]);
        let used = done.unwrap_or(buf.len());
        r.consume(used);
        if done.is_some() {
            if out.last() == Some(&b'\r') {
                out.pop();
            }
            return Ok(Some(cut));
        }
    }
}

/// Reads only the requested window of lines: the lines before it are skipped without being
/// kept, and reading stops at the first line after it.
fn read_file(path: &Path, a: &ReadArgs, output_limit: usize) -> Result<ToolOutput, ToolError> {
    use std::io::BufRead as _;
    let f = open_regular(path, &a.path)?;
    let io_err = |e: std::io::Error| ToolError::Model(format!("cannot read `{}`: {e}", a.path));
    let mut r = std::io::BufReader::with_capacity(64 * 1024, f);
    let head = r.fill_buf().map_err(io_err)?;
    if head.is_empty() {
        return Ok(ToolOutput::text(format!("`{}` is empty", a.path)));
    }
    if let Some(mime) = image_type(head) {
        return read_image(r, path, &a.path, mime);
    }
    if let Some(kind) = named_as_image(path) {
        return Err(ToolError::Model(format!(
            "`{}` is named as a {kind} image, but its content is not a PNG, JPEG, GIF or WebP image",
            a.path
        )));
    }
    if head[..head.len().min(8192)].contains(&0) {
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        return Ok(ToolOutput::text(format!(
            "`{}` is a binary file ({size} bytes); its content is not shown",
            a.path
        )));
    }
    let start = a.offset.unwrap_or(1).max(1);
    let count = a.limit.unwrap_or(DEFAULT_LINES).max(1);
    let mut out = String::new();
    let mut line = Vec::new();
    let mut number = 0usize;
    let mut shown = 0usize;
    let mut more = false;
    let mut full = false;
    loop {
        if shown == count || full {
            // The window is full: whether the file goes on is one peek, not another line
            // (which could be gigabytes long).
            more = !r.fill_buf().map_err(io_err)?.is_empty();
            break;
        }
        let Some(cut) = next_line(&mut r, MAX_LINE_BYTES, &mut line).map_err(io_err)? else {
            break;
        };
        number += 1;
        if number < start {
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let chars = text.chars().count();
        let shown_text: String = if cut || chars > MAX_LINE_CHARS {
            let s: String = text.chars().take(MAX_LINE_CHARS).collect();
            format!("{s}… [line cut at {MAX_LINE_CHARS} characters]")
        } else {
            text.into_owned()
        };
        out.push_str(&format!("{number:>6}\t{shown_text}\n"));
        shown += 1;
        // Past the output limit nothing more would be kept: stop reading.
        full = out.len() >= output_limit;
    }
    if shown == 0 {
        return Err(ToolError::Model(format!(
            "`{}` has {number} lines; offset {start} is past the end",
            a.path
        )));
    }
    if more {
        let end = start - 1 + shown;
        out.push_str(&format!(
            "[lines {start}-{end} shown; the file goes on: use offset {} to read on]\n",
            end + 1
        ));
    }
    Ok(ToolOutput::text(truncate_head(
        &out,
        output_limit,
        "Read a smaller range with offset and limit.",
    )))
}

/// The largest image file read.
pub const MAX_IMAGE_BYTES: u64 = 5 * 1024 * 1024;

/// The image type `head` (a file's first bytes) starts like: PNG, JPEG, GIF or WebP by their
/// magic bytes, never by the file's name.
pub fn image_type(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xff, 0xd8, 0xff]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// The image kind a file's name claims (`.png`), if any.
fn named_as_image(path: &Path) -> Option<&'static str> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    Some(match ext.as_str() {
        "png" => "PNG",
        "jpg" | "jpeg" => "JPEG",
        "gif" => "GIF",
        "webp" => "WebP",
        _ => return None,
    })
}

/// An image file as the model sees it: checked by decoding, scaled down to what providers
/// take ([`crate::image::fit`]), at most [`MAX_IMAGE_BYTES`].
fn read_image(
    r: impl std::io::Read,
    path: &Path,
    shown: &str,
    mime: &'static str,
) -> Result<ToolOutput, ToolError> {
    use base64::Engine as _;
    use std::io::Read as _;
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let too_big = |n: u64| {
        ToolError::Model(format!(
            "`{shown}` is an image of {:.1} MB; images over {} MB are not read",
            n as f64 / (1024.0 * 1024.0),
            MAX_IMAGE_BYTES / (1024 * 1024)
        ))
    };
    if size > MAX_IMAGE_BYTES {
        return Err(too_big(size));
    }
    let mut bytes = Vec::new();
    r.take(MAX_IMAGE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| ToolError::Model(format!("cannot read `{shown}`: {e}")))?;
    if bytes.len() as u64 > MAX_IMAGE_BYTES {
        return Err(too_big(bytes.len() as u64));
    }
    let data = base64::engine::general_purpose::STANDARD.encode(&bytes);
    let kind = mime.trim_start_matches("image/").to_ascii_uppercase();
    match crate::image::fit(mime, &data) {
        crate::image::Fitted::AsSent(image) => Ok(ToolOutput {
            content: format!(
                "`{shown}`: a {kind} image of {} bytes, shown below.",
                bytes.len()
            ),
            terminate: false,
            images: vec![image],
        }),
        crate::image::Fitted::Scaled { image, from } => Ok(ToolOutput {
            content: format!(
                "`{shown}`: a {kind} image of {}×{} pixels, scaled down to fit and shown below.",
                from.0, from.1
            ),
            terminate: false,
            images: vec![image],
        }),
        crate::image::Fitted::Described(why) => Err(ToolError::Model(format!(
            "`{shown}` starts like a {kind} image but cannot be shown: {why}"
        ))),
    }
}

/// Lists a directory.
pub struct ListDir;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListArgs {
    path: String,
}

impl Tool for ListDir {
    fn name(&self) -> &'static str {
        "list_dir"
    }
    fn description(&self) -> &'static str {
        "List the entries of a directory (folders end with `/`, symlinks with `@`)."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]})
    }
    fn effects(&self) -> crate::Effects {
        crate::Effects::READS
    }
}

impl crate::FreeTool for ListDir {
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let a: ListArgs = parse_args(self.name(), args)?;
            let path = resolve_read(ctx, &a.path)?;
            blocking(move || {
                let rd = std::fs::read_dir(&path)
                    .map_err(|e| ToolError::Model(format!("cannot list `{}`: {e}", a.path)))?;
                let mut names: Vec<String> = Vec::new();
                for entry in rd.flatten() {
                    let name = entry.file_name().to_string_lossy().into_owned();
                    let ft = entry.file_type().ok();
                    let suffix = match ft {
                        Some(t) if t.is_symlink() => "@",
                        Some(t) if t.is_dir() => "/",
                        _ => "",
                    };
                    names.push(format!("{name}{suffix}"));
                }
                names.sort();
                let total = names.len();
                names.truncate(MAX_ENTRIES);
                let mut out = names.join("\n");
                if total > MAX_ENTRIES {
                    out.push_str(&format!(
                        "\n[{total} entries; the first {MAX_ENTRIES} shown]"
                    ));
                }
                if total == 0 {
                    out = "(empty directory)".into();
                }
                Ok(ToolOutput::text(out))
            })
            .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::Fixture;
    use super::*;

    fn picture_bytes(w: u32, h: u32, format: ::image::ImageFormat) -> Vec<u8> {
        use base64::Engine as _;
        let data = crate::image::test_picture(w, h, format);
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .unwrap()
    }

    /// `read_file` on an image gives the model the image, checked by its content: a real one
    /// passes (scaled down when too big for a provider), one over 5 MB or named as an image
    /// without being one is refused with what is wrong.
    #[tokio::test]
    async fn read_file_shows_an_image_and_refuses_a_fake_or_huge_one() {
        let f = Fixture::new();
        std::fs::write(
            f.ws().join("shot.png"),
            picture_bytes(40, 30, ::image::ImageFormat::Png),
        )
        .unwrap();
        // A JPEG by its content, whatever its name says.
        std::fs::write(
            f.ws().join("photo.dat"),
            picture_bytes(20, 20, ::image::ImageFormat::Jpeg),
        )
        .unwrap();
        std::fs::write(
            f.ws().join("wide.png"),
            picture_bytes(3000, 20, ::image::ImageFormat::Png),
        )
        .unwrap();
        std::fs::write(f.ws().join("notes.png"), "just text, not a picture\n").unwrap();
        let mut huge = b"\x89PNG\r\n\x1a\n".to_vec();
        huge.resize(6 * 1024 * 1024, 0);
        std::fs::write(f.ws().join("huge.png"), huge).unwrap();

        let out = f.run(&ReadFile, json!({"path": "shot.png"})).await.unwrap();
        assert_eq!(out.images.len(), 1, "{}", out.content);
        assert_eq!(out.images[0].mime, "image/png");
        let out = f
            .run(&ReadFile, json!({"path": "photo.dat"}))
            .await
            .unwrap();
        assert_eq!(out.images[0].mime, "image/jpeg");
        let out = f.run(&ReadFile, json!({"path": "wide.png"})).await.unwrap();
        assert_eq!(out.images.len(), 1);
        assert!(
            out.content.contains("3000×20 pixels, scaled down"),
            "{}",
            out.content
        );

        let e = f
            .run(&ReadFile, json!({"path": "notes.png"}))
            .await
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("its content is not a PNG, JPEG, GIF or WebP"),
            "{e}"
        );
        let e = f
            .run(&ReadFile, json!({"path": "huge.png"}))
            .await
            .unwrap_err();
        assert!(
            e.to_string().contains("images over 5 MB are not read"),
            "{e}"
        );
    }

    #[tokio::test]
    async fn read_file_ranges_and_binary() {
        let f = Fixture::new();
        let body: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        std::fs::write(f.ws().join("a.txt"), body).unwrap();
        std::fs::write(f.ws().join("b.bin"), [0u8, 1, 2, 3]).unwrap();
        let out = f
            .run(&ReadFile, json!({"path": "a.txt", "offset": 3, "limit": 2}))
            .await
            .unwrap();
        assert!(
            out.content.contains("     3\tline 3\n     4\tline 4\n"),
            "{}",
            out.content
        );
        assert!(out.content.contains("use offset 5"));
        let bin = f.run(&ReadFile, json!({"path": "b.bin"})).await.unwrap();
        assert!(bin.content.contains("binary file"));
        let missing = f
            .run(&ReadFile, json!({"path": "nope.txt"}))
            .await
            .unwrap_err();
        assert!(missing.to_string().contains("no such file"));
        let bad = f
            .run(&ReadFile, json!({"file": "a.txt"}))
            .await
            .unwrap_err();
        assert!(bad.to_string().contains("invalid arguments"), "{bad}");
    }
}
