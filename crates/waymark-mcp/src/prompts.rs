//! A server's prompts as slash commands. `/mcp__<server>__<prompt> name=value …` asks the
//! server for the prompt (`prompts/get`), and what it returns becomes the user's message to
//! the model, shown in the transcript like any message the user typed (and redacted like
//! one when it is stored).

use crate::McpError;
use crate::hub::{McpHub, Server, lock};
use rmcp::model::{CallToolResult, GetPromptResult, Role};
use rmcp::service::ServiceError;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;
use waymark_protocol::display::escape_line;
use waymark_protocol::mcp_view::McpPromptView;

/// The longest message a prompt may become; a longer one is refused.
pub const MAX_PROMPT_TEXT: usize = 256 * 1024;
/// The longest the user waits for a prompt, whatever the server's tool timeout says.
pub const PROMPT_WAIT: Duration = Duration::from_secs(30);

/// Why a prompt command cannot be sent, or what the server gave cannot be one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptError {
    #[error("a {0} quote is not closed")]
    UnclosedQuote(char),
    #[error("`{word}` is not name=value (once one argument is named, all are); {takes}")]
    NotNameValue { word: String, takes: String },
    #[error("`{name}` is not one of its arguments; {takes}")]
    UnknownArgument { name: String, takes: String },
    #[error("`{0}` is given twice")]
    Twice(String),
    #[error("{0}")]
    NoArguments(String),
    #[error("missing {names}; type it as {usage}")]
    Missing { names: String, usage: String },
    #[error("the server's prompt has no text")]
    Empty,
    #[error("the server's prompt is {kib} KiB, over the {max} KiB a message may be")]
    TooLong { kib: usize, max: usize },
}

/// `args` split into words: spaces separate them, and "double" or 'single' quotes keep a
/// value's spaces (a backslash in double quotes keeps the next character as it is).
fn words(args: &str) -> Result<Vec<String>, PromptError> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut started = false;
    let mut chars = args.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' | '\'' => {
                started = true;
                let close = c;
                loop {
                    match chars.next() {
                        None => return Err(PromptError::UnclosedQuote(close)),
                        Some(q) if q == close => break,
                        Some('\\') if close == '"' => match chars.next() {
                            Some(e) => word.push(e),
                            None => return Err(PromptError::UnclosedQuote(close)),
                        },
                        Some(q) => word.push(q),
                    }
                }
            }
            c if c.is_whitespace() => {
                if started {
                    out.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            c => {
                started = true;
                word.push(c);
            }
        }
    }
    if started {
        out.push(word);
    }
    Ok(out)
}

/// The arguments `/command args` gives `prompt`: `name=value` words, or, when none names an
/// argument, the words in the order the prompt declares its arguments (the last one takes
/// the rest). Every value is text, as MCP has it.
pub fn arguments(prompt: &McpPromptView, args: &str) -> Result<Map<String, Value>, PromptError> {
    let names: Vec<&str> = prompt.arguments.iter().map(|a| a.name.as_str()).collect();
    let takes = || {
        if names.is_empty() {
            "it takes no arguments".to_string()
        } else {
            format!("it takes {}", names.join(", "))
        }
    };
    let words = words(args)?;
    let keyed = words
        .iter()
        .any(|w| names.iter().any(|n| w.starts_with(&format!("{n}="))));
    let mut out = Map::new();
    if keyed {
        for w in &words {
            let Some((k, v)) = w.split_once('=') else {
                return Err(PromptError::NotNameValue {
                    word: w.clone(),
                    takes: takes(),
                });
            };
            if !names.contains(&k) {
                return Err(PromptError::UnknownArgument {
                    name: k.to_string(),
                    takes: takes(),
                });
            }
            if out
                .insert(k.to_string(), Value::String(v.to_string()))
                .is_some()
            {
                return Err(PromptError::Twice(k.to_string()));
            }
        }
    } else if !words.is_empty() {
        if names.is_empty() {
            return Err(PromptError::NoArguments(takes()));
        }
        let (last, first) = names.split_last().unwrap_or((&"", &[]));
        for (i, w) in words.iter().enumerate() {
            match first.get(i) {
                Some(n) => {
                    out.insert(n.to_string(), Value::String(w.clone()));
                }
                None => {
                    let rest = words[i..].join(" ");
                    out.insert(last.to_string(), Value::String(rest));
                    break;
                }
            }
        }
    }
    let missing: Vec<&str> = prompt
        .arguments
        .iter()
        .filter(|a| a.required && !out.contains_key(&a.name))
        .map(|a| a.name.as_str())
        .collect();
    if !missing.is_empty() {
        return Err(PromptError::Missing {
            names: missing
                .iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", "),
            usage: prompt.usage(),
        });
    }
    Ok(out)
}

/// The message a prompt's result becomes: its messages' text (resources with their URI,
/// images as one line each, as tool results have them), the speaker named on each part
/// when the prompt holds the assistant's side too.
pub fn message(r: &GetPromptResult) -> Result<String, PromptError> {
    let both = r.messages.iter().any(|m| m.role != Role::User);
    let mut parts = Vec::new();
    for m in &r.messages {
        let text = crate::result::shape(&CallToolResult::success(vec![m.content.clone()])).text;
        if text.trim().is_empty() {
            continue;
        }
        parts.push(match (both, &m.role) {
            (false, _) => text,
            (true, Role::User) => format!("User:\n{text}"),
            (true, _) => format!("Assistant:\n{text}"),
        });
    }
    let out = parts.join("\n\n");
    if out.trim().is_empty() {
        return Err(PromptError::Empty);
    }
    if out.len() > MAX_PROMPT_TEXT {
        return Err(PromptError::TooLong {
            kib: out.len() / 1024,
            max: MAX_PROMPT_TEXT / 1024,
        });
    }
    Ok(out)
}

impl McpHub {
    /// The prompt typed as `/command` in `session_id`, and its server: one of a ready
    /// server that serves that session.
    pub fn prompt(&self, session_id: &str, command: &str) -> Option<(Arc<Server>, McpPromptView)> {
        self.list().iter().find_map(|s| {
            if !self.serves_server(s, session_id) {
                return None;
            }
            let p = lock(&s.state)
                .prompts
                .iter()
                .find(|p| p.command == command)
                .cloned()?;
            Some((s.clone(), p))
        })
    }

    /// Like [`McpHub::prompt`], but when no listed prompt has that command, the servers of
    /// the session that are not ready yet (the session just opened) are started first,
    /// within [`PROMPT_WAIT`].
    pub async fn find_prompt(
        &self,
        session_id: &str,
        command: &str,
    ) -> Option<(Arc<Server>, McpPromptView)> {
        if let Some(found) = self.prompt(session_id, command) {
            return Some(found);
        }
        let servers = self.list();
        let starts = servers
            .iter()
            .filter(|s| s.config.enabled && self.serves_server(s, session_id))
            .map(|s| async move {
                let _ = self.ensure(s).await;
            });
        let _ = tokio::time::timeout(PROMPT_WAIT, futures_util::future::join_all(starts)).await;
        self.prompt(session_id, command)
    }

    /// Every prompt the session may use: those of the ready servers that serve it.
    pub fn prompts_for(&self, session_id: &str) -> Vec<McpPromptView> {
        self.list()
            .iter()
            .filter(|s| self.serves_server(s, session_id))
            .flat_map(|s| lock(&s.state).prompts.to_vec())
            .collect()
    }

    /// The messages of `prompt` of `server` with `args`: the server started if it must be,
    /// all within its tool timeout and never past [`PROMPT_WAIT`] (the user waits on it).
    pub async fn get_prompt(
        &self,
        server: &Server,
        prompt: &str,
        args: serde_json::Map<String, serde_json::Value>,
    ) -> Result<rmcp::model::GetPromptResult, McpError> {
        let fail = |m: String| McpError::new(&server.name, m);
        let wait = Duration::from_millis(server.config.tool_timeout_ms).min(PROMPT_WAIT);
        let asked = async {
            let conn = self.ensure(server).await?;
            let params = rmcp::model::GetPromptRequestParams::new(prompt).with_arguments(args);
            // The server's words, on one line: the message is shown as an error.
            match conn.service.peer().get_prompt(params).await {
                Err(ServiceError::McpError(e)) => Err(fail(format!(
                    "prompt `{prompt}` failed: {}",
                    escape_line(&e.message)
                ))),
                Err(_) if conn.is_closed() => Err(fail(format!(
                    "{} while it made prompt `{prompt}`",
                    conn.closed_reason()
                ))),
                Err(e) => Err(fail(format!(
                    "prompt `{prompt}` failed: {}",
                    escape_line(&e.to_string())
                ))),
                Ok(r) => Ok(r),
            }
        };
        tokio::time::timeout(wait, asked).await.unwrap_or_else(|_| {
            Err(fail(format!(
                "no answer for prompt `{prompt}` within {} (its tool_timeout_ms, at most {})",
                crate::seconds(wait),
                crate::seconds(PROMPT_WAIT)
            )))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::PromptMessage;
    use waymark_protocol::mcp_view::McpPromptArgument;

    fn prompt(args: &[(&str, bool)]) -> McpPromptView {
        McpPromptView {
            name: "p".into(),
            command: "mcp__s__p".into(),
            description: String::new(),
            arguments: args
                .iter()
                .map(|(n, r)| McpPromptArgument {
                    name: n.to_string(),
                    description: String::new(),
                    required: *r,
                })
                .collect(),
        }
    }

    /// The arguments by name (a JSON object's order is not the point here).
    fn get(p: &McpPromptView, args: &str) -> Result<Vec<(String, String)>, PromptError> {
        let mut pairs: Vec<(String, String)> = arguments(p, args)?
            .into_iter()
            .map(|(k, v)| (k, v.as_str().unwrap().to_string()))
            .collect();
        pairs.sort();
        Ok(pairs)
    }

    #[test]
    fn arguments_by_name_by_position_and_quoted() {
        let p = prompt(&[("city", true), ("state", false)]);
        let pair = |k: &str, v: &str| (k.to_string(), v.to_string());
        assert_eq!(get(&p, "city=Paris").unwrap(), vec![pair("city", "Paris")]);
        assert_eq!(
            get(&p, r#"state="New York" city='Buffalo'"#).unwrap(),
            vec![pair("city", "Buffalo"), pair("state", "New York")]
        );
        assert_eq!(
            get(&p, "Austin Texas and more").unwrap(),
            vec![pair("city", "Austin"), pair("state", "Texas and more")]
        );
        assert_eq!(
            get(&p, r#"city="a \"b\" c""#).unwrap(),
            vec![pair("city", r#"a "b" c"#)]
        );
        // A value may hold `=`.
        assert_eq!(get(&p, "city=a=b").unwrap(), vec![pair("city", "a=b")]);
    }

    #[test]
    fn bad_arguments_are_named() {
        let p = prompt(&[("city", true), ("state", false)]);
        let e = get(&p, "state=NY").unwrap_err().to_string();
        assert!(
            e.contains("missing `city`") && e.contains("/mcp__s__p city=… [state=…]"),
            "{e}"
        );
        let e = get(&p, "city=x zip=1").unwrap_err().to_string();
        assert!(
            e.contains("`zip=1` is not name=value") || e.contains("`zip`"),
            "{e}"
        );
        let e = get(&p, "city=x city=y").unwrap_err().to_string();
        assert!(e.contains("given twice"), "{e}");
        let e = get(&p, "city=\"open").unwrap_err().to_string();
        assert!(e.contains("not closed"), "{e}");
        let e = get(&prompt(&[]), "anything").unwrap_err().to_string();
        assert!(e.contains("takes no arguments"), "{e}");
        assert!(get(&prompt(&[]), "  ").unwrap().is_empty());
    }

    #[test]
    fn a_prompts_messages_become_one_text() {
        let only_user = GetPromptResult::new(vec![
            PromptMessage::new_text(Role::User, "first"),
            PromptMessage::new_text(Role::User, "second"),
        ]);
        assert_eq!(message(&only_user).unwrap(), "first\n\nsecond");
        let both = GetPromptResult::new(vec![
            PromptMessage::new_text(Role::User, "q"),
            PromptMessage::new_text(Role::Assistant, "a"),
        ]);
        assert_eq!(message(&both).unwrap(), "User:\nq\n\nAssistant:\na");
        assert!(message(&GetPromptResult::new(vec![])).is_err());
        let huge = GetPromptResult::new(vec![PromptMessage::new_text(
            Role::User,
            "x".repeat(MAX_PROMPT_TEXT + 1),
        )]);
        assert!(message(&huge).unwrap_err().to_string().contains("KiB"));
    }
}
