//! Adding and removing MCP servers in the settings (`waymark mcp add/remove`, the desktop's
//! "Tool servers"): checked as the settings are, and never with a secret written into the
//! file. A value for a variable or header that holds a secret must come from the environment
//! (`${VAR}`).

use crate::error::{Error, Result};
use waymark_config::mcp::McpServerConfig;
use waymark_config::{Config, ConfigError};

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

/// What is left of `value` once its `${VAR}` references are taken out; the default of a
/// `${VAR:-default}` stays, since it is what the server gets when VAR is unset.
fn literal_part(value: &str) -> String {
    let mut out = String::new();
    let mut rest = value;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        match rest[i..].find('}') {
            Some(j) => {
                let inner = &rest[i + 2..i + j];
                if let Some((_, default)) = inner.split_once(":-") {
                    out.push_str(default);
                }
                rest = &rest[i + j + 1..];
            }
            None => {
                out.push_str(&rest[i..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Whether `value`, meant to hold a secret, holds any of it literally: anything but blanks
/// and an authorization scheme (`Bearer `, `Basic `, `Token `) outside the `${VAR}`
/// references.
fn holds_literal_secret(value: &str) -> bool {
    literal_part(value)
        .split_whitespace()
        .any(|w| !["bearer", "basic", "token"].contains(&w.to_ascii_lowercase().as_str()))
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
        let key = format!("mcp_servers.{name}.args[{i}]");
        // `NAME=value` (`docker run -e`, `--token=…`), or `--token VALUE` as two arguments.
        let (k, v) = match a.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None if a.starts_with('-') => (a.as_str(), server.args.get(i + 1).map(String::as_str)),
            None => ("", None),
        };
        let k = k.trim_start_matches('-');
        if !k.is_empty() && crate::secrets::is_secret_name(k) && v.is_some_and(holds_literal_secret)
        {
            return Err(refused(key, env_hint(k)));
        }
        if a.contains("://") && url_holds_credential(a) {
            return Err(refused(key, url_hint()));
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
        && url_holds_credential(u)
    {
        return Err(refused(format!("mcp_servers.{name}.url"), url_hint()));
    }
    Ok(())
}

/// Whether a URL (a server's, or one in an argument such as a database address) carries a
/// user name, a password or a query value named like a secret.
fn url_holds_credential(u: &str) -> bool {
    let Some(start) = u.find(|c: char| c.is_ascii_alphabetic()) else {
        return false;
    };
    let Ok(url) = url::Url::parse(&u[start..]) else {
        return false;
    };
    let user = literal_part(url.username());
    let password = url.password().map(literal_part).unwrap_or_default();
    !user.is_empty()
        || !password.is_empty()
        || url.query_pairs().any(|(k, v)| {
            (crate::secrets::is_secret_name(&k) || secret_header(&k)) && holds_literal_secret(&v)
        })
}

fn url_hint() -> String {
    "the URL carries a credential, which never goes in the settings file: send it in a header written with a variable (`Authorization: Bearer ${MY_TOKEN}`), or give the URL itself as `${MY_URL}`".into()
}

/// The tool servers `new` adds or changes over `current`, held to what `waymark mcp add`
/// checks: no literal secret in a variable, an argument, a header or the URL. Servers left
/// as they were are not checked again (a hand-written file keeps working).
pub fn check_changed_servers(current: &Config, new: &Config) -> Result<()> {
    for (name, server) in &new.mcp_servers {
        if current.mcp_servers.get(name) != Some(server) {
            check_no_literal_secrets(name, server)?;
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
        return Err(Error::refused(if names.is_empty() {
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
        return Err(Error::refused(
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
            return Err(Error::refused(format!(
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
            return Err(Error::refused(format!(
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

    /// Saving the whole settings from the window cannot slip in a literal secret that the
    /// add form would refuse (red-team finding).
    #[test]
    fn saved_settings_are_checked_for_literal_secrets_in_changed_servers() {
        let current = Config::default();
        let mut new = Config::default();
        let mut s = stdio_server(&["srv".to_string()], &[]).unwrap();
        s.env.insert(
            "GITHUB_TOKEN".into(),
            "ghp_abcdefghijklmnopqrstuvwxyz0123456789".into(),
        );
        new.mcp_servers.insert("gh".into(), s);
        assert!(check_changed_servers(&current, &new).is_err());
        // The same server already in force is not checked again.
        assert!(check_changed_servers(&new, &new).is_ok());
    }

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_literal_secret_is_refused_with_its_key_named_and_a_reference_is_taken() {
        let mut c = Config::default();
        let s = stdio_server(&strs(&["npx", "srv"]), &strs(&["GITHUB_TOKEN=ghp_abc"])).unwrap();
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
            &strs(&["Authorization: Bearer xyz"]),
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
        assert!(refuse(env("API_TOKEN=${UNSET:-ghp_realtoken123}")));
        assert!(refuse(env("DB_PASSWORD=P@ss:w0rd!")));
        assert!(refuse(args(&["srv", "--token", "ghp_abc"])));
        assert!(!refuse(args(&["srv", "--token", "${GH_TOKEN}"])));
        assert!(refuse(args(&["srv", "postgresql://u:pass@host/db"])));
        assert!(!refuse(args(&["srv", "postgresql://host/db"])));
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
