//! Web fetch: the `web_fetch` tool, which reads one web page for the agent under an SSRF
//! guard (only public addresses, checked after the lookup and on every redirect, and
//! connected to exactly as checked; `web.allow_private` opens listed `host:port`s), an
//! exfiltration guard (no known secret in the URL, at most 2 KB of query), and limits (5
//! redirects, 15 s, 5 MB). HTML becomes Markdown.

pub mod address;
mod error;
pub mod fetch;
pub mod page;
pub mod target;
mod tool;

pub use error::{Result, WebError};
pub use tool::{NAME, WebFetch};

use std::sync::Arc;
use waymark_extension::{Extension, SessionTool};

/// The extension that offers `web_fetch`.
pub struct WebExtension;

impl Extension for WebExtension {
    fn name(&self) -> &'static str {
        "web"
    }

    fn session_tools(&self) -> Vec<Arc<dyn SessionTool>> {
        vec![Arc::new(WebFetch)]
    }
}
