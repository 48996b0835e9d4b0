//! The MCP servers an editor brings to its sessions (ACP's `mcpServers` on `session/new` and
//! `session/load`): each serves the sessions that brought it and no other, and is trusted as
//! the user's own settings are (the editor is the user's), its roots the folders of those
//! sessions. A name the settings or a project already use is refused, as is one another
//! session brought with other settings (a server's name is its tools' prefix); the same server
//! brought by two sessions is one process serving both. It stops when its last session closes.

use crate::hub::{McpHub, lock};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use waymark_config::mcp::McpServerConfig;

impl McpHub {
    /// Adds the servers `session_id`'s editor brought, and starts them (once the hub has
    /// started). Returns each one left out, with why.
    pub fn add_session_servers(
        self: &Arc<Self>,
        session_id: &str,
        servers: BTreeMap<String, McpServerConfig>,
    ) -> Vec<(String, String)> {
        let mut left_out = Vec::new();
        {
            let taken = self.configured_names();
            let mut editors = lock(&self.editors);
            for (name, config) in servers {
                if taken.contains(&name) {
                    left_out.push((
                        name,
                        "your settings or the project's .mcp.json already have a server of that name"
                            .to_string(),
                    ));
                    continue;
                }
                match editors.get_mut(&name) {
                    Some((c, sessions)) if *c == config => {
                        sessions.insert(session_id.to_string());
                    }
                    Some(_) => left_out.push((
                        name,
                        "another editor session has a server of that name with other settings"
                            .to_string(),
                    )),
                    None => {
                        editors.insert(name, (config, BTreeSet::from([session_id.to_string()])));
                    }
                }
            }
        }
        for (name, why) in &left_out {
            tracing::warn!(server = %name, session = %session_id, "an editor's MCP server is left out: {why}");
        }
        self.apply();
        self.start();
        left_out
    }

    /// The session closed: the servers its editor brought serve it no more, and each that
    /// served no other session stops.
    pub fn drop_session_servers(self: &Arc<Self>, session_id: &str) {
        let changed = {
            let mut editors = lock(&self.editors);
            let before = editors.len();
            let mut changed = false;
            for (_, sessions) in editors.values_mut() {
                changed |= sessions.remove(session_id);
            }
            editors.retain(|_, (_, sessions)| !sessions.is_empty());
            changed || editors.len() != before
        };
        if changed {
            self.apply();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stdio(program: &str) -> McpServerConfig {
        McpServerConfig {
            command: Some(program.to_string()),
            // Never started in these tests.
            enabled: false,
            ..McpServerConfig::default()
        }
    }

    fn hub() -> Arc<McpHub> {
        let settings = BTreeMap::from([("git".to_string(), stdio("git-server"))]);
        McpHub::new(&settings, Arc::new(|_| None), Vec::new())
    }

    fn serves(hub: &McpHub, name: &str, session: &str) -> bool {
        hub.server(name)
            .is_some_and(|s| s.editor.is_some() && hub.serves_server(&s, session))
    }

    #[test]
    fn an_editor_cannot_take_a_configured_servers_name() {
        let hub = hub();
        let left = hub.add_session_servers("s1", BTreeMap::from([("git".into(), stdio("evil"))]));
        assert_eq!(left.len(), 1, "{left:?}");
        assert!(left[0].1.contains("already have a server"), "{left:?}");
        // The configured server is untouched, and serves every session as before.
        let git = hub.server("git").unwrap();
        assert!(git.editor.is_none());
        assert_eq!(git.config.command.as_deref(), Some("git-server"));
    }

    #[test]
    fn an_editors_server_serves_the_sessions_that_brought_it_until_the_last_closes() {
        let hub = hub();
        assert!(
            hub.add_session_servers("s1", BTreeMap::from([("docs".into(), stdio("docs-a"))]))
                .is_empty()
        );
        assert!(serves(&hub, "docs", "s1"));
        assert!(!serves(&hub, "docs", "s2"));
        // Another session's server of that name with other settings is refused; the same
        // one is shared.
        let left =
            hub.add_session_servers("s2", BTreeMap::from([("docs".into(), stdio("docs-b"))]));
        assert_eq!(left.len(), 1);
        assert!(!serves(&hub, "docs", "s2"));
        assert!(
            hub.add_session_servers("s2", BTreeMap::from([("docs".into(), stdio("docs-a"))]))
                .is_empty()
        );
        assert!(serves(&hub, "docs", "s1") && serves(&hub, "docs", "s2"));
        hub.drop_session_servers("s1");
        assert!(!serves(&hub, "docs", "s1") && serves(&hub, "docs", "s2"));
        hub.drop_session_servers("s2");
        assert!(hub.server("docs").is_none());
    }
}
