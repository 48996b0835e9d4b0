//! The `web_fetch` tool: fetches one public web page (or a listed private one) and returns
//! it as Markdown or text, redacted and cut to the output limit. It declares that it reaches
//! the network, so the permission guard asks per host in `ask` and refuses it in
//! `read-only`; plan mode lets it run, since reading the web is investigation.

use crate::fetch::{Fetched, MAX_BODY, Reach, fetch};
use crate::page::to_text;
use crate::target::check_url;
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};
use waymark_extension::SessionApi;
use waymark_extension::SessionTool;
use waymark_tools::{Effects, Tool, ToolContext, ToolError, ToolOutput, parse_args, truncate_head};

pub const NAME: &str = "web_fetch";

pub struct WebFetch;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    url: String,
    #[serde(default)]
    prompt: Option<String>,
}

impl Tool for WebFetch {
    fn name(&self) -> &str {
        NAME
    }

    fn description(&self) -> &str {
        "Fetch a web page (http or https) and read it as Markdown or text. Follows redirects on the same host; one to another host is reported for you to fetch. Private addresses are refused unless the user listed them."
    }

    fn schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "url": {"type": "string"},
                "prompt": {"type": "string", "description": "What you look for on the page."}
            },
            "required": ["url"],
            "additionalProperties": false
        })
    }

    fn effects(&self) -> Effects {
        Effects {
            network: true,
            ..Effects::READS
        }
    }

    /// The host a call reaches: the user's "allow for this session" covers that host only.
    fn grant_scope(&self, arguments: &Value) -> Option<String> {
        let raw = arguments.get("url").and_then(Value::as_str).unwrap_or("");
        Some(
            url::Url::parse(raw.trim())
                .ok()
                .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
                .unwrap_or_else(|| raw.chars().take(200).collect()),
        )
    }
}

impl SessionTool for WebFetch {
    fn handle_in<'a>(
        &'a self,
        api: &'a SessionApi,
        ctx: &'a ToolContext,
        args: Value,
    ) -> BoxFuture<'a, Result<ToolOutput, ToolError>> {
        Box::pin(async move {
            let args: Args = parse_args(NAME, args)?;
            let config = api.config();
            let reach = Reach {
                redactor: ctx.redactor.as_deref(),
                allow_private: &config.web.allow_private,
            };
            let start = check_url(&args.url, reach.redactor, reach.allow_private)
                .map_err(|e| ToolError::Model(e.to_string()))?;
            let fetched = fetch(start, &reach, &ctx.cancel)
                .await
                .map_err(|e| ToolError::Model(e.to_string()))?;
            // Converting a big page is CPU work: off the async threads.
            let prompt = args.prompt;
            let said = tokio::task::spawn_blocking(move || report(&fetched, prompt.as_deref()))
                .await
                .map_err(|e| ToolError::Fatal(format!("the page could not be read: {e}")))??;
            let said = match &ctx.redactor {
                Some(r) => r.redact(&said).into_owned(),
                None => said,
            };
            Ok(ToolOutput::text(truncate_head(
                &said,
                ctx.output_limit,
                "The page is longer than the output limit.",
            )))
        })
    }

    /// It works for its caller only, so a subagent may fetch too.
    fn for_subagents(&self) -> bool {
        true
    }
}

/// What the model reads of a fetch.
fn report(f: &Fetched, prompt: Option<&str>) -> Result<String, ToolError> {
    if let Some(next) = &f.elsewhere {
        return Ok(format!(
            "{} redirects (HTTP {}) to {next}, on another host; it was not followed. To read it, call web_fetch with that URL.",
            f.url, f.status
        ));
    }
    let text =
        to_text(f.content_type.as_deref(), &f.body).map_err(|e| ToolError::Model(e.to_string()))?;
    if f.status >= 400 {
        return Err(ToolError::Model(format!(
            "{} answered HTTP {}:\n{}",
            f.url,
            f.status,
            text.chars().take(2000).collect::<String>()
        )));
    }
    let mut head = format!(
        "Fetched {} (HTTP {}, {}, {} bytes).",
        f.url,
        f.status,
        f.content_type.as_deref().unwrap_or("no content type"),
        f.body.len()
    );
    if f.cut {
        head.push_str(&format!(
            " The page is longer than {} MB: only its first {} MB were read.",
            MAX_BODY / (1024 * 1024),
            MAX_BODY / (1024 * 1024)
        ));
    }
    if let Some(p) = prompt.map(str::trim).filter(|p| !p.is_empty()) {
        head.push_str(&format!("\nLooking for: {p}"));
    }
    Ok(format!("{head}\n\n{text}"))
}
