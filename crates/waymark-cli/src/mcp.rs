//! `waymark mcp …`: the MCP servers of the settings, their state and tools; adding and
//! removing one (the settings file is checked and written whole, atomically).

use crate::term::outln;
use clap::Subcommand;
use std::path::Path;
use std::process::ExitCode;
use waymark_runtime::{Runtime, mcp_settings, settings};

#[derive(Subcommand)]
pub(crate) enum McpCommand {
    /// Each server's state (ready, failed with the reason, disabled), its tools and whether
    /// each is read-only. Starts the servers and waits for each (up to its start-up time).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Add a server: `waymark mcp add NAME [--env K=V]… -- COMMAND ARGS…` (stdio), or
    /// `waymark mcp add NAME --url URL [--header 'Name: value']…` (Streamable HTTP). A secret
    /// is given as `${VAR}`, taken from the environment when the server starts.
    Add {
        name: String,
        /// A variable for the server's process (repeatable).
        #[arg(long = "env", value_name = "KEY=VALUE")]
        env: Vec<String>,
        /// The server's Streamable HTTP endpoint, instead of a command.
        #[arg(long, conflicts_with = "command")]
        url: Option<String>,
        /// A header sent to an HTTP server (repeatable).
        #[arg(long = "header", value_name = "NAME: VALUE", requires = "url")]
        headers: Vec<String>,
        /// The server's tools you vouch for as read-only (repeatable).
        #[arg(long = "read-only", value_name = "TOOL")]
        read_only: Vec<String>,
        /// The command that starts a stdio server, and its arguments.
        #[arg(last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Remove a server.
    Remove { name: String },
}

pub(crate) async fn mcp_command(
    runtime: &Runtime,
    settings_path: &Path,
    command: McpCommand,
) -> anyhow::Result<ExitCode> {
    match command {
        McpCommand::List { json } => {
            let servers = runtime.mcp_servers(true).await;
            if json {
                crate::term::json(&servers, true)?;
            } else {
                outln!("{}", waymark_runtime::describe_mcp_servers(&servers));
            }
        }
        McpCommand::Add {
            name,
            env,
            url,
            headers,
            read_only,
            command,
        } => {
            let mut server = match &url {
                Some(u) => {
                    if !env.is_empty() {
                        anyhow::bail!("--env is for a server started by a command, not --url");
                    }
                    mcp_settings::http_server(u, &headers)?
                }
                None => mcp_settings::stdio_server(&command, &env)?,
            };
            server.read_only_tools = read_only;
            change_settings(runtime, settings_path, |c| {
                mcp_settings::add_server(c, &name, server)
            })?;
            outln!(
                "added MCP server `{name}` to {}; sessions opened from now on use it (check it with `waymark mcp list`)",
                settings_path.display()
            );
        }
        McpCommand::Remove { name } => {
            change_settings(runtime, settings_path, |c| {
                mcp_settings::remove_server(c, &name)
            })?;
            outln!(
                "removed MCP server `{name}` from {}",
                settings_path.display()
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Loads the settings file, applies `change`, and saves it the way every front end saves
/// (checked against what the file held).
fn change_settings(
    runtime: &Runtime,
    path: &Path,
    change: impl FnOnce(&mut waymark_config::Config) -> waymark_runtime::Result<()>,
) -> anyhow::Result<()> {
    let before = settings::load(path, false)?;
    let mut config = before.clone();
    change(&mut config)?;
    settings::save_checked(path, &before, &config, runtime.options().clock.now_ms())?;
    Ok(())
}
