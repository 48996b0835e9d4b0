//! File-changing tools: write, edit, multiedit, append. Each resolves its target through
//! [`fs_policy::resolve_write`] and writes atomically.

use super::fs_policy::{resolve_write, write_atomic};
use super::text;
use super::{Tool, ToolContext, ToolError, ToolOutput, blocking, parse_args};
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

/// Creates or replaces a file.
pub struct Write;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WriteArgs {
    path: String,
    content: String,
}

impl Tool for Write {
    fn name(&self) -> &'static str {
        "write"
    }
    fn description(&self) -> &'static str {
        "Create a file or replace its whole content. Missing folders are created."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "path": {"type": "string"}, "content": {"type": "string"}
        }, "required": ["path", "content"]})
    }
    fn effects(&self) -> crate::Effects {
        crate::Effects::WRITES
    }
}

impl crate::FreeTool for Write {
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let a: WriteArgs = parse_args(self.name(), args)?;
            let target = resolve_write(ctx, &a.path)?;
            blocking(move || {
                let existed = target.exists();
                write_atomic(&target, a.content.as_bytes())?;
                Ok(ToolOutput::text(format!(
                    "{} {} ({} bytes)",
                    if existed { "replaced" } else { "created" },
                    a.path,
                    a.content.len()
                )))
            })
            .await
        })
    }
}

/// One replacement.
#[derive(Deserialize, Clone)]
#[serde(deny_unknown_fields)]
struct EditSpec {
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: Option<bool>,
}

/// Applies one edit to `text`; the old text must occur exactly once unless `replace_all`.
fn apply_edit(text: &str, e: &EditSpec, path: &str) -> Result<(String, usize), ToolError> {
    if e.old_string.is_empty() {
        return Err(ToolError::Model(
            "old_string is empty; use write to create a file".into(),
        ));
    }
    if e.old_string == e.new_string {
        return Err(ToolError::Model(
            "old_string and new_string are the same; nothing would change".into(),
        ));
    }
    let n = text.matches(&e.old_string).count();
    match (n, e.replace_all.unwrap_or(false)) {
        (0, _) => Err(ToolError::Model(format!(
            "old_string was not found in {path}; read the file and copy the text exactly, whitespace included"
        ))),
        (1, _) => Ok((text.replacen(&e.old_string, &e.new_string, 1), 1)),
        (n, true) => Ok((text.replace(&e.old_string, &e.new_string), n)),
        (n, false) => Err(ToolError::Model(format!(
            "old_string occurs {n} times in {path}; include more surrounding text to make it unique, or set replace_all"
        ))),
    }
}

/// What a file tool call would make of its file: the text before and after, computed
/// exactly as the tool will (for the permission question's diff). `Err` says why the call
/// would fail.
pub fn before_after(
    tool: &str,
    target: &std::path::Path,
    args: &Value,
) -> Result<(String, String), ToolError> {
    let read = || -> Result<(String, text::TextStyle), ToolError> {
        if target.exists() {
            text::read(target, &target.display().to_string())
        } else {
            Ok((String::new(), text::TextStyle::NEW))
        }
    };
    match tool {
        "write" => {
            let a: WriteArgs = parse_args(tool, args.clone())?;
            let (before, _) = read()?;
            Ok((before, a.content))
        }
        "append" => {
            let a: WriteArgs = parse_args(tool, args.clone())?;
            let (before, style) = read()?;
            let after = format!("{before}{}", text::normalize(&a.content, &style));
            Ok((before, after))
        }
        "edit" => {
            let a: EditArgs = parse_args(tool, args.clone())?;
            let (before, style) = read()?;
            let spec = EditSpec {
                old_string: text::normalize(&a.old_string, &style),
                new_string: text::normalize(&a.new_string, &style),
                replace_all: a.replace_all,
            };
            let (after, _) = apply_edit(&before, &spec, &a.path)?;
            Ok((before, after))
        }
        "multiedit" => {
            let a: MultiEditArgs = parse_args(tool, args.clone())?;
            let (before, style) = read()?;
            let mut after = before.clone();
            for e in &a.edits {
                let e = EditSpec {
                    old_string: text::normalize(&e.old_string, &style),
                    new_string: text::normalize(&e.new_string, &style),
                    replace_all: e.replace_all,
                };
                after = apply_edit(&after, &e, &a.path)?.0;
            }
            Ok((before, after))
        }
        other => Err(ToolError::Model(format!("`{other}` has no preview"))),
    }
}

/// What a file tool call asks to put in its file, from its arguments alone (the file is not
/// read): for a private place, where the question must not show the current contents.
/// `write`/`append` give their text as added; `edit`/`multiedit` each old text beside its
/// replacement.
pub fn requested_text(tool: &str, args: &Value) -> Result<(String, String), ToolError> {
    match tool {
        "write" | "append" => {
            let a: WriteArgs = parse_args(tool, args.clone())?;
            Ok((String::new(), a.content))
        }
        "edit" => {
            let a: EditArgs = parse_args(tool, args.clone())?;
            Ok((a.old_string, a.new_string))
        }
        "multiedit" => {
            let a: MultiEditArgs = parse_args(tool, args.clone())?;
            let (mut old, mut new) = (String::new(), String::new());
            for (i, e) in a.edits.iter().enumerate() {
                let head = format!("[edit {}]\n", i + 1);
                old.push_str(&head);
                old.push_str(&e.old_string);
                old.push('\n');
                new.push_str(&head);
                new.push_str(&e.new_string);
                new.push('\n');
            }
            Ok((old, new))
        }
        other => Err(ToolError::Model(format!("`{other}` has no preview"))),
    }
}

/// Replaces text in a file.
pub struct Edit;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EditArgs {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: Option<bool>,
}

impl Tool for Edit {
    fn name(&self) -> &'static str {
        "edit"
    }
    fn description(&self) -> &'static str {
        "Replace `old_string` with `new_string` in a file. The old text must occur exactly once unless `replace_all` is true."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "path": {"type": "string"}, "old_string": {"type": "string"},
            "new_string": {"type": "string"}, "replace_all": {"type": "boolean"}
        }, "required": ["path", "old_string", "new_string"]})
    }
    fn effects(&self) -> crate::Effects {
        crate::Effects::WRITES
    }
}

impl crate::FreeTool for Edit {
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let a: EditArgs = parse_args(self.name(), args)?;
            let target = resolve_write(ctx, &a.path)?;
            blocking(move || {
                let (body, style) = text::read(&target, &a.path)?;
                let spec = EditSpec {
                    old_string: text::normalize(&a.old_string, &style),
                    new_string: text::normalize(&a.new_string, &style),
                    replace_all: a.replace_all,
                };
                let (new, n) = apply_edit(&body, &spec, &a.path)?;
                write_atomic(&target, text::encode(&new, &style).as_bytes())?;
                Ok(ToolOutput::text(format!(
                    "edited {} ({n} replacement{})",
                    a.path,
                    if n == 1 { "" } else { "s" }
                )))
            })
            .await
        })
    }
}

/// Several edits to one file, all or nothing.
pub struct MultiEdit;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MultiEditArgs {
    path: String,
    edits: Vec<EditSpec>,
}

impl Tool for MultiEdit {
    fn name(&self) -> &'static str {
        "multiedit"
    }
    fn description(&self) -> &'static str {
        "Apply several edits to one file in order; if any edit fails, the file is left unchanged."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "path": {"type": "string"},
            "edits": {"type": "array", "items": {"type": "object", "properties": {
                "old_string": {"type": "string"}, "new_string": {"type": "string"},
                "replace_all": {"type": "boolean"}
            }, "required": ["old_string", "new_string"]}}
        }, "required": ["path", "edits"]})
    }
    fn effects(&self) -> crate::Effects {
        crate::Effects::WRITES
    }
}

impl crate::FreeTool for MultiEdit {
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let a: MultiEditArgs = parse_args(self.name(), args)?;
            if a.edits.is_empty() {
                return Err(ToolError::Model("`edits` is empty".into()));
            }
            let target = resolve_write(ctx, &a.path)?;
            blocking(move || {
                let (mut body, style) = text::read(&target, &a.path)?;
                let mut total = 0;
                for (i, e) in a.edits.iter().enumerate() {
                    let e = EditSpec {
                        old_string: text::normalize(&e.old_string, &style),
                        new_string: text::normalize(&e.new_string, &style),
                        replace_all: e.replace_all,
                    };
                    let (next, n) = apply_edit(&body, &e, &a.path).map_err(|err| {
                        ToolError::Model(format!("edit #{} failed, no change made: {err}", i + 1))
                    })?;
                    body = next;
                    total += n;
                }
                write_atomic(&target, text::encode(&body, &style).as_bytes())?;
                Ok(ToolOutput::text(format!(
                    "edited {} ({} edits, {total} replacements)",
                    a.path,
                    a.edits.len()
                )))
            })
            .await
        })
    }
}

/// Appends to a file (created if missing).
pub struct Append;

impl Tool for Append {
    fn name(&self) -> &'static str {
        "append"
    }
    fn description(&self) -> &'static str {
        "Append text to the end of a file; the file is created if missing."
    }
    fn schema(&self) -> Value {
        json!({"type": "object", "properties": {
            "path": {"type": "string"}, "content": {"type": "string"}
        }, "required": ["path", "content"]})
    }
    fn effects(&self) -> crate::Effects {
        crate::Effects::WRITES
    }
}

impl crate::FreeTool for Append {
    fn handle<'a>(
        &'a self,
        ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let a: WriteArgs = parse_args(self.name(), args)?;
            let target = resolve_write(ctx, &a.path)?;
            blocking(move || {
                let (mut body, mut style) = if target.exists() {
                    text::read(&target, &a.path)?
                } else {
                    (String::new(), text::TextStyle::NEW)
                };
                let added = text::normalize(&a.content, &style);
                if !added.is_empty() {
                    // The appended text decides how the file now ends.
                    style.final_newline = added.ends_with('\n');
                }
                body.push_str(&added);
                write_atomic(&target, text::encode(&body, &style).as_bytes())?;
                Ok(ToolOutput::text(format!(
                    "appended {} bytes to {}",
                    a.content.len(),
                    a.path
                )))
            })
            .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::Fixture;
    use super::*;

    #[tokio::test]
    async fn write_edit_append_multiedit() {
        let f = Fixture::new();
        f.run(
            &Write,
            json!({"path": "d/a.txt", "content": "one two two\n"}),
        )
        .await
        .unwrap();
        let dup = f
            .run(
                &Edit,
                json!({"path": "d/a.txt", "old_string": "two", "new_string": "2"}),
            )
            .await
            .unwrap_err();
        assert!(dup.to_string().contains("occurs 2 times"));
        f.run(
            &Edit,
            json!({"path": "d/a.txt", "old_string": "two", "new_string": "2", "replace_all": true}),
        )
        .await
        .unwrap();
        f.run(&Append, json!({"path": "d/a.txt", "content": "tail\n"}))
            .await
            .unwrap();
        assert_eq!(
            std::fs::read_to_string(f.ws().join("d/a.txt")).unwrap(),
            "one 2 2\ntail\n"
        );
        let r = f
            .run(
                &MultiEdit,
                json!({"path": "d/a.txt", "edits": [
                    {"old_string": "one", "new_string": "1"},
                    {"old_string": "missing", "new_string": "x"}
                ]}),
            )
            .await
            .unwrap_err();
        assert!(r.to_string().contains("edit #2"));
        assert_eq!(
            std::fs::read_to_string(f.ws().join("d/a.txt")).unwrap(),
            "one 2 2\ntail\n"
        );
        f.run(&MultiEdit, json!({"path": "d/a.txt", "edits": [
            {"old_string": "one", "new_string": "1"}, {"old_string": "tail", "new_string": "end"}
        ]}))
        .await
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(f.ws().join("d/a.txt")).unwrap(),
            "1 2 2\nend\n"
        );
        let nf = f
            .run(
                &Edit,
                json!({"path": "d/a.txt", "old_string": "zzz", "new_string": "y"}),
            )
            .await
            .unwrap_err();
        assert!(nf.to_string().contains("not found"));
    }
}
