//! Adding and removing MCP servers in the settings (`waymark mcp add/remove`, the desktop's
//! "Tool servers"): checked as the settings are, and never with a secret written into the
//! file. A value for a variable or header that holds a secret must come from the environment
//! (`${VAR}`).

use crate::error::{Error, Result};
use waymark_protocol::config::{Config, ConfigError};
use waymark_protocol::mcp::McpServerConfig;

/// Header names that carry credentials.
fn secret_header(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n == "cookie"
        || [
            "auth",
            "token",
            "key",
            "secret",
            "password",
            "session",
            "credential",
        ]
        .iter()
        .any(|w| n.contains(w))
}

/// What is left of `value` once its `${VAR}` and `${VAR:-default}` references are taken out.
fn literal_part(value: &str) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        match rest[i..].find('}') {
            Some(j) => rest = &rest[i + j + 1..],
            None => {
                out.push_str(&rest[i..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Whether `value` holds literal text that could be a secret: a run of eight or more
/// letters, digits, `_`, `-`, `.`, `+`, `/` or `=` outside the `${…}` references (`Bearer `
/// before a reference is fine; `ghp_…${X:-}` is not).
fn holds_literal_secret(value: &str) -> bool {
    let lit = literal_part(value);
    let mut run = 0;
    for c in lit.chars() {
        if c.is_ascii_alphanumeric() || "_-.+/=".contains(c) {
            run += 1;
            if run >= 8 {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
}

fn refused(key: String, message: String) -> Error {
    Error::Config(ConfigError::new(key, message))
}

/// Refuses a literal secret in a server's `env`, `headers`, `args` (`NAME=value` with a
/// secret's name, as `docker run -e` takes them) or URL (credentials, or a query value named
/// like a secret), naming the key.
pub fn check_no_literal_secrets(name: &str, server: &McpServerConfig) -> Result<()> {
    let env_hint = |k: &str| {
        format!(
            "`{k}` holds a secret, which never goes in the settings file: give it as `{k}=${{{k}}}` and set {k} in the environment"
        )
    };
    for (k, v) in &server.env {
        if crate::secrets::is_secret_name(k) && holds_literal_secret(v) {
            return Err(refused(format!("mcp_servers.{name}.env.{k}"), env_hint(k)));
        }
    }
    for (i, a) in server.args.iter().enumerate() {
        if let Some((k, v)) = a.split_once('=')
            && crate::secrets::is_secret_name(k.trim_start_matches('-'))
            && holds_literal_secret(v)
        {
            return Err(refused(
                format!("mcp_servers.{name}.args[{i}]"),
                env_hint(k.trim_start_matches('-')),
            ));
        }
    }
    for (k, v) in &server.headers {
        if secret_header(k) && holds_literal_secret(v) {
            return Err(refused(
                format!("mcp_servers.{name}.headers.{k}"),
                format!(
                    "the `{k}` header carries a credential, which never goes in the settings file: write it with a variable, e.g. `{k}: Bearer ${{MY_TOKEN}}`, and set MY_TOKEN in the environment"
                ),
            ));
        }
    }
    if let Some(u) = &server.url
        && let Ok(url) = url::Url::parse(u)
    {
        let query_secret = url.query_pairs().any(|(k, v)| {
            (crate::secrets::is_secret_name(&k) || secret_header(&k)) && holds_literal_secret(&v)
        });
        if !url.username().is_empty() || url.password().is_some() || query_secret {
            return Err(refused(
                format!("mcp_servers.{name}.url"),
                "the URL carries a credential, which never goes in the settings file: send it in a header written with a variable (`Authorization: Bearer ${MY_TOKEN}`)".into(),
            ));
        }
    }
    Ok(())
}

/// Adds server `name`; refused when one of that name exists or the result is invalid.
pub fn add_server(config: &mut Config, name: &str, server: McpServerConfig) -> Result<()> {
    if config.mcp_servers.contains_key(name) {
        return Err(Error::Config(ConfigError::new(
            format!("mcp_servers.{name}"),
            format!("a server named `{name}` is already configured; remove it first"),
        )));
    }
    check_no_literal_secrets(name, &server)?;
    let mut next = config.clone();
    next.mcp_servers.insert(name.to_string(), server);
    next.validate()?;
    *config = next;
    Ok(())
}

/// Removes server `name`; refused, listing the servers, when there is none of that name.
pub fn remove_server(config: &mut Config, name: &str) -> Result<()> {
    if config.mcp_servers.remove(name).is_none() {
        let names: Vec<&str> = config.mcp_servers.keys().map(String::as_str).collect();
        return Err(Error::Refused(if names.is_empty() {
            format!("no MCP server named `{name}`: none is configured")
        } else {
            format!(
                "no MCP server named `{name}`; the servers are: {}",
                names.join(", ")
            )
        }));
    }
    Ok(())
}

/// A stdio server from a command line and `KEY=VALUE` variables.
pub fn stdio_server(command: &[String], env: &[String]) -> Result<McpServerConfig> {
    let Some((program, args)) = command.split_first() else {
        return Err(Error::Refused(
            "give the server's command after `--`, or --url".into(),
        ));
    };
    let mut server = McpServerConfig {
        command: Some(program.clone()),
        args: args.to_vec(),
        ..Default::default()
    };
    for e in env {
        let Some((k, v)) = e.split_once('=') else {
            return Err(Error::Refused(format!(
                "`{}` is not KEY=VALUE",
                crate::display::escape_line(e)
            )));
        };
        server.env.insert(k.trim().to_string(), v.to_string());
    }
    Ok(server)
}

/// A Streamable HTTP server from its URL and `Name: value` headers.
pub fn http_server(url: &str, headers: &[String]) -> Result<McpServerConfig> {
    let mut server = McpServerConfig {
        url: Some(url.to_string()),
        ..Default::default()
    };
    for h in headers {
        let Some((k, v)) = h.split_once(':') else {
            return Err(Error::Refused(format!(
                "`{}` is not a header: write `Name: value`",
                crate::display::escape_line(h)
            )));
        };
        server
            .headers
            .insert(k.trim().to_string(), v.trim().to_string());
    }
    Ok(server)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_literal_secret_is_refused_with_its_key_named_and_a_reference_is_taken() {
        let mut c = Config::default();
        let s = stdio_server(
            &strs(&["npx", "srv"]),
            &strs(&["GITHUB_TOKEN=ghp_abc0123456789"]),
        )
        .unwrap();
        let e = add_server(&mut c, "gh", s).unwrap_err();
        assert!(e.to_string().contains("GITHUB_TOKEN"), "{e}");
        assert!(c.mcp_servers.is_empty(), "nothing added");
        let s = stdio_server(
            &strs(&["npx", "srv"]),
            &strs(&["GITHUB_TOKEN=${GITHUB_TOKEN}", "LEVEL=debug"]),
        )
        .unwrap();
        add_server(&mut c, "gh", s).unwrap();
        assert_eq!(c.mcp_servers["gh"].env["LEVEL"], "debug");
        let h = http_server(
            "https://example.com/mcp",
            &strs(&["Authorization: Bearer xyz0123456789abcdef"]),
        )
        .unwrap();
        let e = add_server(&mut c, "web", h).unwrap_err();
        assert!(e.to_string().contains("Authorization"), "{e}");
        let h = http_server(
            "https://example.com/mcp",
            &strs(&["Authorization: Bearer ${WEB_TOKEN}"]),
        )
        .unwrap();
        add_server(&mut c, "web", h).unwrap();
    }

    #[test]
    fn secrets_in_arguments_urls_and_half_references_are_refused_too() {
        let refuse = |s: McpServerConfig| check_no_literal_secrets("x", &s).is_err();
        let args = |a: &[&str]| stdio_server(&strs(a), &[]).unwrap();
        assert!(refuse(args(&[
            "docker",
            "run",
            "-e",
            "GITHUB_TOKEN=ghp_0123456789",
            "img"
        ])));
        assert!(!refuse(args(&[
            "docker",
            "run",
            "-e",
            "GITHUB_TOKEN=${GITHUB_TOKEN}",
            "img"
        ])));
        assert!(!refuse(args(&[
            "docker",
            "run",
            "-e",
            "GITHUB_TOKEN",
            "img"
        ])));
        let env = |e: &str| stdio_server(&strs(&["srv"]), &strs(&[e])).unwrap();
        assert!(refuse(env("API_TOKEN=ghp_0123456789${N:-}")));
        assert!(refuse(env("API_TOKEN=ghp_0123456789$${")));
        assert!(!refuse(env("API_TOKEN=${API_TOKEN:-}")));
        let http = |u: &str, h: &[&str]| http_server(u, &strs(h)).unwrap();
        assert!(refuse(http("https://u:p@example.com/mcp", &[])));
        assert!(refuse(http(
            "https://example.com/mcp?api_key=abcdef0123456",
            &[]
        )));
        assert!(!refuse(http("https://example.com/mcp?page=2", &[])));
        assert!(refuse(http("https://e/mcp", &["X-Auth: abcdef0123456"])));
        assert!(!refuse(http(
            "https://e/mcp",
            &["Authorization: Bearer ${TOKEN}"]
        )));
    }

    #[test]
    fn names_and_values_are_checked_and_removal_names_the_servers() {
        let mut c = Config::default();
        let s = stdio_server(&strs(&["srv"]), &[]).unwrap();
        assert!(add_server(&mut c, "bad name", s.clone()).is_err());
        add_server(&mut c, "one", s.clone()).unwrap();
        assert!(
            add_server(&mut c, "one", s)
                .unwrap_err()
                .to_string()
                .contains("already")
        );
        assert!(stdio_server(&[], &[]).is_err());
        assert!(stdio_server(&strs(&["x"]), &strs(&["NOEQUALS"])).is_err());
        assert!(http_server("https://e/mcp", &strs(&["nocolon"])).is_err());
        let e = remove_server(&mut c, "two").unwrap_err();
        assert!(e.to_string().contains("one"), "{e}");
        remove_server(&mut c, "one").unwrap();
        assert!(c.mcp_servers.is_empty());
    }
}
