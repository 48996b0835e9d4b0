//! Model Context Protocol servers as the settings name them (`mcp_servers`, `mcp`), a
//! project's `.mcp.json` read into the same form, and `${VAR}` taken from the environment
//! when a server is started. No I/O here: the MCP client crate starts what this describes.

use crate::error::ConfigError;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The variable each stdio server's process starts with, naming the app process that owns
/// it (what a later start uses to find the leftovers of a killed app). Never passed on to
/// tool processes, which inherit it from nowhere else.
pub const OWNER_VAR: &str = "WAYMARK_MCP_OWNER";

/// How long one tool call may take unless the server's settings say otherwise.
pub const DEFAULT_TOOL_TIMEOUT_MS: u64 = 120_000;
/// How long a server may take to start and answer `initialize`.
pub const DEFAULT_STARTUP_TIMEOUT_MS: u64 = 30_000;

fn yes() -> bool {
    true
}
fn tool_timeout() -> u64 {
    DEFAULT_TOOL_TIMEOUT_MS
}
fn startup_timeout() -> u64 {
    DEFAULT_STARTUP_TIMEOUT_MS
}

/// One server: a command started as a child process (stdio), or a URL (Streamable HTTP).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program of a stdio server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// Its arguments (`${VAR}` is taken from the environment).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Variables set for it (values may use `${VAR}`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// The folder it starts in (the session's workspace when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The endpoint of a Streamable HTTP server (`https://…/mcp`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Headers sent to it (values may use `${VAR}`: a token belongs in the environment).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Tools the user vouches for as read-only (besides those the server marks so).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_only_tools: Vec<String>,
    /// Tools never offered to the model.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disabled_tools: Vec<String>,
    #[serde(default = "tool_timeout")]
    pub tool_timeout_ms: u64,
    #[serde(default = "startup_timeout")]
    pub startup_timeout_ms: u64,
    /// Let the server ask the session's model for completions (`sampling/createMessage`);
    /// declined unless this is set.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_sampling: bool,
}

/// The `mcp` section: how MCP tools are offered.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// When the MCP tools' schemas would take more than this share of the model's context
    /// window (percent), the model gets `tool_search` instead of them.
    pub tool_search_percent: u32,
    /// How long a session's first model request waits for its servers to be ready
    /// (milliseconds; never longer than a server's own `startup_timeout_ms`). 0 sends it at
    /// once, and the tools of servers still starting come later.
    pub first_request_wait_ms: u64,
}

/// The default of `mcp.first_request_wait_ms`.
pub const DEFAULT_FIRST_REQUEST_WAIT_MS: u64 = 3_000;

/// A server with every default and no way to reach it yet (give `command` or `url`).
impl Default for McpServerConfig {
    fn default() -> Self {
        McpServerConfig {
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            url: None,
            headers: BTreeMap::new(),
            enabled: true,
            read_only_tools: Vec::new(),
            disabled_tools: Vec::new(),
            tool_timeout_ms: DEFAULT_TOOL_TIMEOUT_MS,
            startup_timeout_ms: DEFAULT_STARTUP_TIMEOUT_MS,
            allow_sampling: false,
        }
    }
}

impl Default for McpConfig {
    fn default() -> Self {
        McpConfig {
            tool_search_percent: 10,
            first_request_wait_ms: DEFAULT_FIRST_REQUEST_WAIT_MS,
        }
    }
}

/// How a server is reached, with `${VAR}` taken from the environment.
#[derive(Clone, Debug, PartialEq)]
pub enum McpTransport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<String>,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
    },
}

/// Why a server cannot be started as configured; names the server.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("MCP server `{server}`: {message}")]
pub struct McpSetupError {
    pub server: String,
    pub message: String,
}

impl McpServerConfig {
    /// How to reach the server, `${VAR}` and `${VAR:-default}` in its arguments, variables and
    /// headers read with `env`. A variable that is not set (and has no default) fails the
    /// server with a message naming it.
    pub fn transport(
        &self,
        server: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<McpTransport, McpSetupError> {
        let fail = |message: String| McpSetupError {
            server: server.to_string(),
            message,
        };
        let expand = |text: &str| expand_vars(text, env).map_err(|e| fail(e.to_string()));
        match (&self.command, &self.url) {
            (Some(command), None) => Ok(McpTransport::Stdio {
                command: command.clone(),
                args: self
                    .args
                    .iter()
                    .map(|a| expand(a))
                    .collect::<Result<_, _>>()?,
                env: self
                    .env
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), expand(v)?)))
                    .collect::<Result<_, McpSetupError>>()?,
                cwd: self.cwd.clone(),
            }),
            (None, Some(url)) => Ok(McpTransport::Http {
                url: url.clone(),
                headers: self
                    .headers
                    .iter()
                    .map(|(k, v)| Ok((k.clone(), expand(v)?)))
                    .collect::<Result<_, McpSetupError>>()?,
            }),
            _ => Err(fail("give either `command` or `url`".into())),
        }
    }
}

/// Why `${…}` in a server's settings could not be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ExpandError {
    #[error("`${{` without its `}}` in `{0}`")]
    Unclosed(String),
    #[error("`${{{0}}}` is not a variable name (letters, digits and _)")]
    NotAName(String),
    #[error("${{{0}}} is not set in the environment")]
    Unset(String),
}

/// `text` with each `${NAME}` replaced by the variable's value, or `${NAME:-default}` by the
/// default when the variable is unset or empty. `$$` is a plain `$`.
pub fn expand_vars(
    text: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, ExpandError> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(more) = after.strip_prefix('$') {
            out.push('$');
            rest = more;
            continue;
        }
        let Some(inner) = after.strip_prefix('{') else {
            out.push('$');
            rest = after;
            continue;
        };
        let Some(end) = inner.find('}') else {
            return Err(ExpandError::Unclosed(text.to_string()));
        };
        let (name, default) = match inner[..end].split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (&inner[..end], None),
        };
        if !is_var_name(name) {
            return Err(ExpandError::NotAName(name.to_string()));
        }
        match (env(name).filter(|v| !v.is_empty()), default) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => return Err(ExpandError::Unset(name.to_string())),
        }
        rest = &inner[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

fn is_var_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && s.len() <= 128
}

/// Longest server name: tool names are `mcp__<server>__<tool>`, and providers cap a tool's
/// name at 64 characters.
pub const SERVER_NAME_MAX: usize = 32;

/// Checks the `mcp_servers` map; the error names the first offending key.
pub fn validate_servers(servers: &BTreeMap<String, McpServerConfig>) -> Result<(), ConfigError> {
    for (name, s) in servers {
        let key = |k: &str| format!("mcp_servers.{name}.{k}");
        let named = !name.is_empty()
            && name.len() <= SERVER_NAME_MAX
            && !name.contains("__")
            // `a_` and tool `b` would be named like `a` and tool `_b`.
            && !name.starts_with('_')
            && !name.ends_with('_')
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !named {
            return Err(ConfigError::new(
                format!("mcp_servers.{name}"),
                format!(
                    "server names use letters, digits, `-` and `_` (no `__`, and not first or last), at most {SERVER_NAME_MAX} characters"
                ),
            ));
        }
        match (&s.command, &s.url) {
            (Some(c), None) => {
                if c.trim().is_empty() {
                    return Err(ConfigError::new(key("command"), "must name a program"));
                }
                if !s.headers.is_empty() {
                    return Err(ConfigError::new(
                        key("headers"),
                        "headers are for a server reached by `url`",
                    ));
                }
                if let Some(bad) = s.env.keys().find(|k| !is_var_name(k)) {
                    return Err(ConfigError::new(
                        key("env"),
                        format!("`{bad}` is not a variable name (letters, digits and _)"),
                    ));
                }
            }
            (None, Some(u)) => {
                let ok = (u.starts_with("http://") || u.starts_with("https://"))
                    && u.len() > "https://".len()
                    && !u.chars().any(|c| c.is_whitespace() || c.is_control());
                if !ok {
                    return Err(ConfigError::new(
                        key("url"),
                        format!("must be an http:// or https:// address (got `{u}`)"),
                    ));
                }
                if !s.args.is_empty() || !s.env.is_empty() || s.cwd.is_some() {
                    return Err(ConfigError::new(
                        key("url"),
                        "`args`, `env` and `cwd` are for a server started by `command`",
                    ));
                }
                let token = |h: &str| {
                    !h.is_empty()
                        && h.chars()
                            .all(|c| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c))
                };
                if let Some(bad) = s.headers.keys().find(|h| !token(h)) {
                    return Err(ConfigError::new(
                        key("headers"),
                        format!("`{bad}` is not a header name"),
                    ));
                }
                if let Some((h, _)) = s.headers.iter().find(|(_, v)| v.contains(['\r', '\n'])) {
                    return Err(ConfigError::new(
                        key("headers"),
                        format!("the value of `{h}` holds a line break"),
                    ));
                }
            }
            (Some(_), Some(_)) => {
                return Err(ConfigError::new(
                    format!("mcp_servers.{name}"),
                    "give either `command` (a stdio server) or `url` (Streamable HTTP), not both",
                ));
            }
            (None, None) => {
                return Err(ConfigError::new(
                    format!("mcp_servers.{name}"),
                    "give `command` (a stdio server) or `url` (Streamable HTTP)",
                ));
            }
        }
        for (list, tools) in [
            ("read_only_tools", &s.read_only_tools),
            ("disabled_tools", &s.disabled_tools),
        ] {
            if tools.iter().any(|t| t.trim().is_empty()) {
                return Err(ConfigError::new(key(list), "tool names cannot be empty"));
            }
        }
        for (k, v, min, max) in [
            ("tool_timeout_ms", s.tool_timeout_ms, 1_000, 3_600_000),
            ("startup_timeout_ms", s.startup_timeout_ms, 1_000, 600_000),
        ] {
            if v < min || v > max {
                return Err(ConfigError::new(
                    key(k),
                    format!("must be between {min} and {max} (got {v})"),
                ));
            }
        }
    }
    Ok(())
}

/// A project's `.mcp.json` (`{"mcpServers": {…}}`, the form Claude Code and Cursor read) as
/// servers of the settings' form. An entry's `type` (`stdio`, `http`, `streamable-http`) is
/// checked against how it is reached; `sse` servers are refused (the old transport).
pub fn project_servers(text: &str) -> Result<BTreeMap<String, McpServerConfig>, ConfigError> {
    let root: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| ConfigError::new("(file)", format!("not JSON: {e}")))?;
    let Some(obj) = root.as_object() else {
        return Err(ConfigError::new("(file)", "must be an object"));
    };
    if let Some(k) = obj.keys().find(|k| *k != "mcpServers") {
        return Err(ConfigError::new(
            k.clone(),
            "unknown key (only `mcpServers`)",
        ));
    }
    let Some(entries) = obj.get("mcpServers").and_then(|v| v.as_object()) else {
        return Err(ConfigError::new(
            "mcpServers",
            "must be an object of servers",
        ));
    };
    let mut servers = BTreeMap::new();
    for (name, entry) in entries {
        let key = format!("mcpServers.{name}");
        let mut entry = entry.clone();
        let kind = entry
            .as_object_mut()
            .and_then(|o| o.remove("type"))
            .map(|t| t.as_str().map(str::to_string).unwrap_or_default());
        let server: McpServerConfig = serde_path_to_error::deserialize(&entry).map_err(|e| {
            let path = e.path().to_string();
            let at = if path == "." {
                key.clone()
            } else {
                format!("{key}.{path}")
            };
            ConfigError::new(at, e.into_inner().to_string())
        })?;
        let ok = match kind.as_deref() {
            None => true,
            Some("stdio") => server.command.is_some(),
            Some("http" | "streamable-http" | "streamableHttp") => server.url.is_some(),
            Some("sse") => {
                return Err(ConfigError::new(
                    format!("{key}.type"),
                    "the old SSE transport is not supported: use the server's Streamable HTTP endpoint",
                ));
            }
            Some(other) => {
                return Err(ConfigError::new(
                    format!("{key}.type"),
                    format!("unknown type `{other}` (stdio or http)"),
                ));
            }
        };
        if !ok {
            return Err(ConfigError::new(
                format!("{key}.type"),
                "does not match how the server is reached (`command` is stdio, `url` is http)",
            ));
        }
        // A folder inside the project, named from it: nothing absolute, nothing above.
        if let Some(c) = &server.cwd
            && (c.starts_with('/')
                || std::path::Path::new(c)
                    .components()
                    .any(|p| matches!(p, std::path::Component::ParentDir)))
        {
            return Err(ConfigError::new(
                format!("{key}.cwd"),
                "must be a folder inside the project, named from it (no `/` at the start, no `..`)",
            ));
        }
        // Only the user's own settings vouch for tools or hand a server the model.
        if !server.read_only_tools.is_empty() {
            return Err(ConfigError::new(
                format!("{key}.read_only_tools"),
                "a project cannot mark its own tools read-only: list them in your settings instead",
            ));
        }
        if server.allow_sampling {
            return Err(ConfigError::new(
                format!("{key}.allow_sampling"),
                "a project cannot let its servers use your model: set it in your settings instead",
            ));
        }
        servers.insert(name.clone(), server);
    }
    validate_servers(&servers).map_err(|e| {
        ConfigError::new(e.key.replacen("mcp_servers.", "mcpServers.", 1), e.message)
    })?;
    Ok(servers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_server_is_what_an_empty_entry_reads_as() {
        let read: McpServerConfig = serde_json::from_str("{}").unwrap();
        assert_eq!(read, McpServerConfig::default());
    }

    fn env(vars: &[(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        let vars = vars.to_vec();
        move |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    fn servers(json: &str) -> Result<BTreeMap<String, McpServerConfig>, ConfigError> {
        let map: BTreeMap<String, McpServerConfig> = serde_json::from_str(json).unwrap();
        validate_servers(&map).map(|()| map)
    }

    #[test]
    fn a_stdio_and_an_http_server_with_defaults() {
        let s = servers(
            r#"{"fs": {"command": "npx", "args": ["-y", "server-filesystem", "${HOME}"]},
                "gh": {"url": "https://api.example/mcp", "headers": {"Authorization": "Bearer ${GH_TOKEN}"}}}"#,
        )
        .unwrap();
        assert!(s["fs"].enabled);
        assert_eq!(s["fs"].tool_timeout_ms, DEFAULT_TOOL_TIMEOUT_MS);
        assert_eq!(s["gh"].startup_timeout_ms, DEFAULT_STARTUP_TIMEOUT_MS);
        let vars = env(&[("HOME", "/home/u"), ("GH_TOKEN", "t0k")]);
        assert_eq!(
            s["fs"].transport("fs", &vars).unwrap(),
            McpTransport::Stdio {
                command: "npx".into(),
                args: vec!["-y".into(), "server-filesystem".into(), "/home/u".into()],
                env: BTreeMap::new(),
                cwd: None
            }
        );
        match s["gh"].transport("gh", &vars).unwrap() {
            McpTransport::Http { headers, .. } => {
                assert_eq!(headers["Authorization"], "Bearer t0k")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_missing_variable_fails_that_server_naming_both() {
        let s = servers(r#"{"gh": {"url": "https://x/mcp", "headers": {"Authorization": "Bearer ${GH_TOKEN}"}}}"#)
            .unwrap();
        let e = s["gh"].transport("gh", &env(&[])).unwrap_err();
        assert_eq!(
            e.to_string(),
            "MCP server `gh`: ${GH_TOKEN} is not set in the environment"
        );
    }

    #[test]
    fn variables_expand_with_defaults_and_dollars_stay_plain() {
        let vars = env(&[("A", "1"), ("EMPTY", "")]);
        assert_eq!(expand_vars("x${A}y", &vars).unwrap(), "x1y");
        assert_eq!(expand_vars("${B:-two}", &vars).unwrap(), "two");
        assert_eq!(expand_vars("${EMPTY:-d}", &vars).unwrap(), "d");
        assert_eq!(expand_vars("$$HOME $5 a$", &vars).unwrap(), "$HOME $5 a$");
        assert!(
            expand_vars("${A", &vars)
                .unwrap_err()
                .to_string()
                .contains("without its")
        );
        assert!(
            expand_vars("${A B}", &vars)
                .unwrap_err()
                .to_string()
                .contains("not a variable name")
        );
        // A value is never expanded again.
        let tricky = env(&[("A", "${B}")]);
        assert_eq!(expand_vars("${A}", &tricky).unwrap(), "${B}");
    }

    #[test]
    fn bad_servers_are_refused_with_the_key_named() {
        let cases = [
            (
                r#"{"a__b": {"command": "x"}}"#,
                "mcp_servers.a__b",
                "no `__`",
            ),
            (
                r#"{"a_": {"command": "x"}}"#,
                "mcp_servers.a_",
                "not first or last",
            ),
            (
                r#"{"_a": {"command": "x"}}"#,
                "mcp_servers._a",
                "not first or last",
            ),
            (
                r#"{"has space": {"command": "x"}}"#,
                "mcp_servers.has space",
                "letters",
            ),
            (r#"{"s": {}}"#, "mcp_servers.s", "give `command`"),
            (
                r#"{"s": {"command": "x", "url": "https://h/mcp"}}"#,
                "mcp_servers.s",
                "not both",
            ),
            (
                r#"{"s": {"command": " "}}"#,
                "mcp_servers.s.command",
                "program",
            ),
            (
                r#"{"s": {"command": "x", "headers": {"A": "b"}}}"#,
                "mcp_servers.s.headers",
                "`url`",
            ),
            (
                r#"{"s": {"command": "x", "env": {"A-B": "1"}}}"#,
                "mcp_servers.s.env",
                "variable name",
            ),
            (
                r#"{"s": {"url": "ftp://h/mcp"}}"#,
                "mcp_servers.s.url",
                "http://",
            ),
            (
                r#"{"s": {"url": "https://h/mcp", "args": ["x"]}}"#,
                "mcp_servers.s.url",
                "`command`",
            ),
            (
                r#"{"s": {"url": "https://h/mcp", "headers": {"Bad Name": "x"}}}"#,
                "mcp_servers.s.headers",
                "header name",
            ),
            (
                r#"{"s": {"url": "https://h/mcp", "headers": {"X": "a\r\nEvil: 1"}}}"#,
                "mcp_servers.s.headers",
                "line break",
            ),
            (
                r#"{"s": {"command": "x", "read_only_tools": [""]}}"#,
                "mcp_servers.s.read_only_tools",
                "empty",
            ),
            (
                r#"{"s": {"command": "x", "tool_timeout_ms": 5}}"#,
                "mcp_servers.s.tool_timeout_ms",
                "between",
            ),
            (
                r#"{"s": {"command": "x", "startup_timeout_ms": 99999999}}"#,
                "mcp_servers.s.startup_timeout_ms",
                "between",
            ),
        ];
        for (json, key, words) in cases {
            let e = servers(json).unwrap_err();
            assert_eq!(e.key, key, "{json}: {e}");
            assert!(e.message.contains(words), "{json}: {e}");
        }
        // An unknown key is refused by name.
        let e = serde_json::from_str::<BTreeMap<String, McpServerConfig>>(
            r#"{"s": {"command": "x", "comand": "y"}}"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("comand"), "{e}");
    }

    #[test]
    fn a_project_file_in_the_common_form() {
        let s = project_servers(
            r#"{"mcpServers": {
                "fs": {"type": "stdio", "command": "npx", "args": ["server-filesystem", "."]},
                "web": {"type": "http", "url": "https://mcp.example/mcp"},
                "plain": {"command": "srv"}}}"#,
        )
        .unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(s["web"].url.as_deref(), Some("https://mcp.example/mcp"));
        for (json, key, words) in [
            (r#"{"servers": {}}"#, "servers", "unknown key"),
            (r#"{"mcpServers": []}"#, "mcpServers", "object"),
            (
                r#"{"mcpServers": {"x": {"type": "sse", "url": "https://h/sse"}}}"#,
                "mcpServers.x.type",
                "SSE",
            ),
            (
                r#"{"mcpServers": {"x": {"type": "http", "command": "srv"}}}"#,
                "mcpServers.x.type",
                "does not match",
            ),
            (
                r#"{"mcpServers": {"x": {"type": "ws", "url": "https://h"}}}"#,
                "mcpServers.x.type",
                "unknown type",
            ),
            (
                r#"{"mcpServers": {"x": {"command": "srv", "bogus": 1}}}"#,
                "mcpServers.x.bogus",
                "bogus",
            ),
            (
                r#"{"mcpServers": {"x": {"command": "srv", "args": "one"}}}"#,
                "mcpServers.x.args",
                "sequence",
            ),
            (
                r#"{"mcpServers": {"x": {}}}"#,
                "mcpServers.x",
                "give `command`",
            ),
            ("not json", "(file)", "not JSON"),
        ] {
            let e = project_servers(json).unwrap_err();
            assert_eq!(e.key, key, "{json}: {e}");
            assert!(e.message.contains(words), "{json}: {e}");
        }
    }
}
