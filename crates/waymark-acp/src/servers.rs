//! The MCP servers an editor names in `session/new` and `session/load`, as Waymark's own
//! server settings: a stdio server with its command, arguments and environment, or an HTTP one
//! with its address and headers. They join that session alone (`waymark_mcp::editors`).

use agent_client_protocol::v1::schema as acp;
use waymark_config::mcp::McpServerConfig;
use waymark_protocol::display::escape_line;

/// `server` as a server's settings, by its name; or why it is left out.
pub(crate) fn config_of(
    server: &acp::McpServer,
) -> Result<(String, McpServerConfig), (String, String)> {
    let (name, config) = match server {
        acp::McpServer::Stdio(s) => (
            s.name.clone(),
            McpServerConfig {
                command: Some(s.command.display().to_string()),
                args: s.args.iter().map(|a| literal(a)).collect(),
                env: s
                    .env
                    .iter()
                    .map(|v| (v.name.clone(), literal(&v.value)))
                    .collect(),
                ..McpServerConfig::default()
            },
        ),
        acp::McpServer::Http(h) => (
            h.name.clone(),
            McpServerConfig {
                url: Some(h.url.clone()),
                headers: h
                    .headers
                    .iter()
                    .map(|v| (v.name.clone(), literal(&v.value)))
                    .collect(),
                ..McpServerConfig::default()
            },
        ),
        acp::McpServer::Sse(s) => {
            return Err((
                s.name.clone(),
                "SSE servers are not supported; use stdio or HTTP".to_string(),
            ));
        }
        _ => {
            return Err((
                "(unnamed)".to_string(),
                "only stdio and HTTP servers are supported".to_string(),
            ));
        }
    };
    let one = std::collections::BTreeMap::from([(name.clone(), config)]);
    if let Err(e) = waymark_config::mcp::validate_servers(&one) {
        return Err((name, e.to_string()));
    }
    let config = one.into_values().next().unwrap_or_default();
    Ok((name, config))
}

/// The most secrets taken from one server.
const SECRETS_MAX: usize = 32;

/// The longest secret value taken.
const SECRET_LEN_MAX: usize = 4096;

/// The values `server` is given that are secrets (by their name: a key, a token, a password,
/// or an authorization or cookie header), to be redacted like the user's own. The redactor
/// works on stored events' JSON text, so only a plain value is taken (no quote, backslash or
/// control character, which could match the text's structure instead of a string in it), under a
/// name of letters, digits, `_` and `-`; at most [`SECRETS_MAX`] of them.
pub(crate) fn secrets_of(server: &acp::McpServer) -> Vec<(String, String)> {
    let named = |name: &str| {
        waymark_config::secrets::is_secret_name(name)
            || ["authorization", "proxy-authorization", "cookie"]
                .contains(&name.to_ascii_lowercase().as_str())
    };
    let pairs: Vec<(&String, &String)> = match server {
        acp::McpServer::Stdio(s) => s.env.iter().map(|v| (&v.name, &v.value)).collect(),
        acp::McpServer::Http(h) => h.headers.iter().map(|v| (&v.name, &v.value)).collect(),
        _ => Vec::new(),
    };
    let plain = |v: &str| {
        v.len() <= SECRET_LEN_MAX && !v.chars().any(|c| c == '"' || c == '\\' || c.is_control())
    };
    let mut secrets = Vec::new();
    for (name, value) in pairs.into_iter().filter(|(name, _)| named(name)) {
        let name: String = name
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
            .take(64)
            .collect();
        let value = value.trim();
        if !plain(value) {
            continue;
        }
        secrets.push((name.clone(), value.to_string()));
        // `Bearer <token>`: the token may be shown without its scheme.
        if let Some((_, token)) = value.split_once(char::is_whitespace) {
            secrets.push((name, token.trim().to_string()));
        }
    }
    secrets.truncate(SECRETS_MAX);
    secrets
}

/// A value the editor gave, as a settings value that means just it: settings expand
/// `${VAR}` from the environment, and the editor already did any expanding it wanted.
fn literal(value: &str) -> String {
    value.replace('$', "$$")
}

/// The message telling the editor which servers did not join, and why.
pub(crate) fn left_out_text(left_out: &[(String, String)]) -> String {
    let mut text = String::from("Some of the editor's MCP servers did not join this session:\n");
    for (name, why) in left_out {
        text.push_str(&format!("- {}: {}\n", escape_line(name), escape_line(why)));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_keys_an_editor_gives_a_server_are_found_by_name() {
        let http: acp::McpServer = serde_json::from_value(serde_json::json!({
            "type": "http", "name": "h", "url": "https://example.com/mcp",
            "headers": [
                {"name": "Authorization", "value": "Bearer abc123def456"},
                {"name": "Accept", "value": "application/json"}
            ]
        }))
        .unwrap();
        assert_eq!(
            secrets_of(&http),
            [
                (
                    "Authorization".to_string(),
                    "Bearer abc123def456".to_string()
                ),
                ("Authorization".to_string(), "abc123def456".to_string())
            ]
        );
        let stdio: acp::McpServer = serde_json::from_value(serde_json::json!({
            "name": "s", "command": "/bin/true", "args": [],
            "env": [{"name": "GITHUB_TOKEN", "value": "ghp_x"}, {"name": "HOME", "value": "/h"}]
        }))
        .unwrap();
        assert_eq!(
            secrets_of(&stdio),
            [("GITHUB_TOKEN".to_string(), "ghp_x".to_string())]
        );
    }

    /// A hostile editor's "secret" must not reach into the stored events' JSON text: a name
    /// is cleaned, a value that could match the text's structure is not taken, and only so
    /// many are.
    #[test]
    fn a_hostile_editors_secrets_cannot_touch_the_json_they_are_redacted_from() {
        let mut env: Vec<serde_json::Value> = vec![
            serde_json::json!({"name": "KEY\",\"approved\":true,\"X", "value": "abcdefgh12345"}),
            serde_json::json!({"name": "API_KEY", "value": "\",\"type\":\""}),
            serde_json::json!({"name": "OTHER_KEY", "value": "line\nbreak-secret"}),
        ];
        env.extend((0..100).map(
            |i| serde_json::json!({"name": format!("K{i}_KEY"), "value": format!("value-{i:08}")}),
        ));
        let stdio: acp::McpServer = serde_json::from_value(serde_json::json!({
            "name": "s", "command": "/bin/true", "args": [], "env": env
        }))
        .unwrap();
        let secrets = secrets_of(&stdio);
        assert_eq!(
            secrets[0],
            ("KEYapprovedtrueX".to_string(), "abcdefgh12345".to_string())
        );
        assert!(
            secrets
                .iter()
                .all(|(n, v)| !n.contains('"') && !v.contains('"') && !v.contains('\n'))
        );
        assert_eq!(secrets.len(), SECRETS_MAX);
    }
}
