//! The Settings' "Tool servers": the MCP servers' state and tools, and the changes the page
//! makes to them (add, remove, enable, vouch for a tool as read-only). Every change is a
//! change of the settings file, saved like any other (`store_settings`); putting it in force
//! starts, stops or restarts the servers it touched.

use crate::commands::store_settings;
use crate::error::{IpcError, IpcResult};
use crate::host::Host;
use tauri::State;
use waymark_config::Config;
use waymark_config::mcp::McpServerConfig;
use waymark_protocol::mcp_view::{McpPromptView, McpServerView};
use waymark_runtime::mcp_settings;

/// Every configured server with its state and tools. Servers not started yet are started
/// (in the background: this returns at once, a starting one says so).
#[tauri::command]
#[specta::specta]
pub async fn mcp_servers(host: State<'_, Host>) -> IpcResult<Vec<McpServerView>> {
    Ok(host.runtime.mcp_servers(false).await)
}

/// The prompts session `id` may type as commands: those of the ready servers that serve
/// it (a project's serve only its folder's sessions).
#[tauri::command]
#[specta::specta]
pub async fn mcp_prompts(host: State<'_, Host>, id: String) -> IpcResult<Vec<McpPromptView>> {
    Ok(host.runtime.mcp().prompts_for(&id))
}

/// Adds server `name`, started by `command` (program, then arguments; `env` as `NAME=value`
/// lines) or reached at `url` (`headers` as `Name: value` lines). Secrets go in as `${VAR}`
/// references: a literal one is refused, naming where it is.
#[tauri::command]
#[specta::specta]
pub async fn mcp_add_server(
    host: State<'_, Host>,
    name: String,
    command: Vec<String>,
    url: Option<String>,
    env: Vec<String>,
    headers: Vec<String>,
) -> IpcResult<()> {
    let server = server_from(&command, url.as_deref(), &env, &headers)?;
    let mut config = current(&host);
    mcp_settings::add_server(&mut config, name.trim(), server)?;
    store_settings(&host, config)
}

/// Removes server `name` (it is stopped).
#[tauri::command]
#[specta::specta]
pub async fn mcp_remove_server(host: State<'_, Host>, name: String) -> IpcResult<()> {
    let mut config = current(&host);
    mcp_settings::remove_server(&mut config, &name)?;
    store_settings(&host, config)
}

/// Turns server `name` on or off (`enabled` in the settings).
#[tauri::command]
#[specta::specta]
pub async fn mcp_set_enabled(host: State<'_, Host>, name: String, enabled: bool) -> IpcResult<()> {
    let mut config = current(&host);
    server_mut(&mut config, &name)?.enabled = enabled;
    store_settings(&host, config)
}

/// Vouches for `tool` of server `name` as read-only, or takes that back (`read_only_tools`).
/// A tool the server itself marks read-only stays so either way.
#[tauri::command]
#[specta::specta]
pub async fn mcp_set_read_only(
    host: State<'_, Host>,
    name: String,
    tool: String,
    read_only: bool,
) -> IpcResult<()> {
    let mut config = current(&host);
    vouch(server_mut(&mut config, &name)?, &tool, read_only)?;
    store_settings(&host, config)
}

/// The settings in force, to change.
fn current(host: &Host) -> Config {
    host.runtime.config().as_ref().clone()
}

/// The server a command line or a URL describes; exactly one of them must be given, and
/// variables go with a command, headers with a URL.
fn server_from(
    command: &[String],
    url: Option<&str>,
    env: &[String],
    headers: &[String],
) -> IpcResult<McpServerConfig> {
    let url = url.map(str::trim).filter(|u| !u.is_empty());
    let refused = |message: &str| Err(IpcError::new("refused", message));
    match (command.is_empty(), url) {
        (false, Some(_)) => refused("give the server's command line or its URL, not both"),
        (true, None) => refused("give the server's command line, or its URL"),
        (false, None) if !headers.is_empty() => refused(
            "headers are sent to a server reached by URL; a server started by a command takes variables instead",
        ),
        (true, Some(_)) if !env.is_empty() => refused(
            "variables are set for a server started by a command; a server reached by URL takes headers instead",
        ),
        (false, None) => Ok(mcp_settings::stdio_server(command, env)?),
        (true, Some(u)) => Ok(mcp_settings::http_server(u, headers)?),
    }
}

/// The configured server `name`, or an error naming it.
fn server_mut<'a>(config: &'a mut Config, name: &str) -> IpcResult<&'a mut McpServerConfig> {
    config.mcp_servers.get_mut(name).ok_or_else(|| {
        IpcError::new(
            "refused",
            format!(
                "no MCP server named `{}` is configured",
                waymark_runtime::display::escape_line(name)
            ),
        )
    })
}

/// Adds `tool` to the server's `read_only_tools`, or removes it.
fn vouch(server: &mut McpServerConfig, tool: &str, read_only: bool) -> IpcResult<()> {
    if tool.trim().is_empty() {
        return Err(IpcError::new("refused", "no tool named"));
    }
    let listed = server.read_only_tools.iter().any(|t| t == tool);
    if read_only && !listed {
        server.read_only_tools.push(tool.to_string());
    } else if !read_only {
        server.read_only_tools.retain(|t| t != tool);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strs(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_server_is_a_command_line_or_a_url_never_both_nor_neither() {
        let stdio =
            server_from(&strs(&["srv", "stdio"]), None, &strs(&["LEVEL=debug"]), &[]).unwrap();
        assert_eq!(stdio.command.as_deref(), Some("srv"));
        assert_eq!(stdio.args, ["stdio"]);
        assert_eq!(stdio.env["LEVEL"], "debug");
        // A blank URL field is no URL.
        let blank = server_from(&strs(&["srv"]), Some("  "), &[], &[]).unwrap();
        assert_eq!(blank.url, None);
        let http = server_from(
            &[],
            Some(" https://example.com/mcp "),
            &[],
            &strs(&["Authorization: Bearer ${TOKEN}"]),
        )
        .unwrap();
        assert_eq!(http.url.as_deref(), Some("https://example.com/mcp"));
        assert_eq!(http.headers["Authorization"], "Bearer ${TOKEN}");

        let both = server_from(&strs(&["srv"]), Some("https://e/mcp"), &[], &[]).unwrap_err();
        assert!(both.message.contains("not both"), "{both}");
        let neither = server_from(&[], None, &[], &[]).unwrap_err();
        assert!(neither.message.contains("command line"), "{neither}");
        assert!(server_from(&strs(&["srv"]), None, &[], &strs(&["X: y"])).is_err());
        assert!(server_from(&[], Some("https://e/mcp"), &strs(&["A=b"]), &[]).is_err());
        // The runtime's own checks come through with their words.
        let bad = server_from(&strs(&["srv"]), None, &strs(&["NOEQUALS"]), &[]).unwrap_err();
        assert!(bad.message.contains("KEY=VALUE"), "{bad}");
    }

    #[test]
    fn vouching_adds_a_tool_once_and_taking_it_back_removes_it() {
        let mut config = Config::default();
        let s = server_from(&strs(&["srv"]), None, &[], &[]).unwrap();
        mcp_settings::add_server(&mut config, "one", s).unwrap();
        let server = server_mut(&mut config, "one").unwrap();
        vouch(server, "read_file", true).unwrap();
        vouch(server, "read_file", true).unwrap();
        vouch(server, "list", true).unwrap();
        assert_eq!(server.read_only_tools, ["read_file", "list"]);
        vouch(server, "read_file", false).unwrap();
        assert_eq!(server.read_only_tools, ["list"]);
        assert!(vouch(server, " ", true).is_err());
        config.validate().unwrap();

        let missing = server_mut(&mut config, "two").unwrap_err();
        assert!(missing.message.contains("`two`"), "{missing}");
    }
}
