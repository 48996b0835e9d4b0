//! The extensions every session gets: plan mode, thread goals, checkpoints, worktrees, web
//! fetch, the user's hooks and subagents, in the order their guards and hooks run.

use crate::error::Result;
use crate::extension::Extension;
use std::sync::Arc;

/// Plan mode, thread goals and checkpoints, in the order their guards and hooks run.
pub fn builtin() -> Vec<Arc<dyn Extension>> {
    vec![
        Arc::new(crate::plan::PlanExtension),
        Arc::new(crate::goal::GoalExtension),
        Arc::new(crate::checkpoint::CheckpointExtension),
        Arc::new(crate::worktree::WorktreeExtension),
        Arc::new(crate::web::WebExtension),
        Arc::new(crate::hooks::HooksExtension::default()),
        Arc::new(crate::agents::SubagentsExtension),
    ]
}

/// A database file with the built-in extensions' tables too (benchmarks and tests that work
/// below the runtime).
pub fn store_with_builtin(path: &std::path::Path) -> Result<crate::store::Store> {
    let store = crate::store::Store::open(path)?;
    crate::extension::migrate(&store, &builtin())?;
    Ok(store)
}

#[cfg(test)]
mod store_tests {
    use crate::store::Store;
    use rusqlite::Connection;

    /// A database from before extensions owned their tables (core versions 1–4 with the
    /// plan and goal tables): it opens, keeps its rows, and no table is created twice.
    #[test]
    fn a_database_from_before_extension_migrations_keeps_its_plans_and_goals() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch("CREATE TABLE schema_version (version INTEGER NOT NULL)")
                .unwrap();
            for (v, sql) in [
                include_str!("../../waymark-store/migrations/0001_init.sql"),
                include_str!("../../waymark-plan/migrations/0001_plans.sql"),
                include_str!("../../waymark-goal/migrations/0001_goals.sql"),
                include_str!("../../waymark-store/migrations/0004_grants.sql"),
            ]
            .iter()
            .enumerate()
            {
                conn.execute_batch(sql).unwrap();
                conn.execute("INSERT INTO schema_version VALUES (?1)", [v as i64 + 1])
                    .unwrap();
            }
            conn.execute_batch(
                "INSERT INTO workspaces (id, path, created_at) VALUES (1, '/w', 0);
                 INSERT INTO sessions (id, workspace_id, created_at, updated_at) VALUES ('s', 1, 0, 0);
                 INSERT INTO goals (id, session_id, objective, status, reason, actor, created_at, updated_at)
                     VALUES ('g', 's', 'keep me', 'active', 'created', 'user', 0, 0);
                 UPDATE sessions SET current_goal_id = 'g' WHERE id = 's';
                 INSERT INTO grants (session_id, tool, kind, pattern, plan_mode)
                     VALUES ('s', 'bash', 'exact', 'ls', 1), ('s', 'write', 'tool', '', 0);
                 INSERT INTO questionnaires (id, session_id, kind, payload, status, created_at)
                     VALUES ('q', 's', 'permission',
                             '{\"tool\":\"bash\",\"shell\":true,\"plan_mode\":true,\"arguments\":{},\"summary\":\"run\"}',
                             'pending', 0);",
            )
            .unwrap();
        }
        let store = Store::open(&path).unwrap();
        for ext in super::builtin() {
            store
                .migrate_extension(ext.name(), ext.migrations())
                .unwrap();
        }
        let (objective, versions): (String, i64) = store
            .read(|c| {
                Ok::<_, crate::store::StoreError>((
                    c.query_row("SELECT objective FROM goals WHERE id = 'g'", [], |r| {
                        r.get(0)
                    })?,
                    c.query_row("SELECT SUM(version) FROM extension_schema", [], |r| {
                        r.get(0)
                    })?,
                ))
            })
            .unwrap();
        // Plan at version 4 (comments, grant scopes, its own session table), goal at 11
        // (question, usage limit, steps, its own session and turn tables, the cost budget,
        // the queued goals' budgets and order, the agent's wait and its guards, and the
        // checks on top), checkpoints at 2 (their mode records), worktrees at 2 (the
        // user's identity), MCP at 1 and hooks at 1 (the project decisions of each).
        assert_eq!((objective.as_str(), versions), ("keep me", 21));
        // The current goal moved to the goal's own table; the core columns are empty.
        let (current, left): (String, Option<String>) = store
            .read(|c| {
                Ok::<_, crate::store::StoreError>((
                    c.query_row("SELECT current_goal_id FROM goal_sessions", [], |r| {
                        r.get(0)
                    })?,
                    c.query_row("SELECT current_goal_id FROM sessions", [], |r| r.get(0))?,
                ))
            })
            .unwrap();
        assert_eq!((current.as_str(), left), ("g", None));
        // The grant given in plan mode keeps ending with it; the other stays the session's;
        // the pending question asked in plan mode says its scope.
        let (scopes, payload): (Vec<(String, Option<String>)>, String) = store
            .read(|c| {
                let mut st = c.prepare("SELECT tool, scope FROM grants ORDER BY tool")?;
                let rows = st
                    .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
                    .collect::<Result<Vec<_>, _>>()?;
                let p = c.query_row("SELECT payload FROM questionnaires", [], |r| r.get(0))?;
                Ok::<_, crate::store::StoreError>((rows, p))
            })
            .unwrap();
        assert_eq!(
            scopes,
            [("bash".into(), Some("plan".into())), ("write".into(), None)]
        );
        let payload: serde_json::Value = serde_json::from_str(&payload).unwrap();
        assert_eq!(
            (payload.get("plan_mode"), payload["scope"].as_str()),
            (None, Some("plan"))
        );
    }
}
