//! A goal's baseline and the weakened-check verdict (G-51). Before the first turn of a goal
//! with checks, the runtime runs the checks once (how many tests each ran) and records the
//! workspace's test files (tests, skip markers, assertions) and protected files (G-52). At a
//! completion claim whose checks all pass, it compares: fewer tests ran, a check that no
//! longer reports its tests, a test file deleted, skip markers added, tests or assertions
//! removed, a protected file changed without the user. Any of these pauses the goal
//! `checks_weakened` with the findings named, instead of completing it.

use crate::check_records::has_baseline;
use crate::checks::CheckRun;
use crate::protect::Protected;
use crate::test_files::{self, Scanned};
use std::collections::BTreeMap;
use waymark_extension::SessionApi;
use waymark_extension::error::{Error, Result};
use waymark_store::Tx;

/// The protected set of the goal with these checks.
pub(crate) fn protected(api: &SessionApi, checks: &[String]) -> Result<Protected> {
    Protected::new(&api.config().goal.protect, checks, api.workspace())
        .map_err(|e| Error::refused(e.to_string()))
}

/// Takes the baseline of the session's active goal if it has checks and none was taken:
/// before the goal's first turn asks the model anything. A stopped run takes none (the next
/// turn tries again).
pub(crate) async fn before_turn(
    api: &SessionApi,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<()> {
    let Some(goal) = api.read(|c| crate::db::current_goal(c, api.id()))? else {
        return Ok(());
    };
    if goal.status != waymark_protocol::GoalStatus::Active {
        return Ok(());
    }
    let (checks, taken) = api.read(|c| {
        Ok((
            crate::check_records::checks_of(c, &goal.id)?,
            has_baseline(c, &goal.id)?,
        ))
    })?;
    if checks.is_empty() || taken {
        return Ok(());
    }
    let protect = protected(api, &checks)?;
    let runs = crate::checks::run_all(api, &goal.id, &checks, cancel, true).await?;
    if cancel.is_cancelled() || runs.len() < checks.len() {
        return Ok(());
    }
    // Its build output becomes the base every later check starts from.
    let (sandbox, owner) = (
        api.sandbox().clone(),
        crate::checks::scratch_owner(&goal.id),
    );
    // Unfrozen, later checks simply build from nothing: slower, never less safe.
    match tokio::task::spawn_blocking(move || sandbox.freeze_scratch(&owner)).await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => tracing::warn!("the goal's baseline build was not kept: {e}"),
        Err(e) => tracing::warn!("the goal's baseline build was not kept: {e}"),
    }
    let ws = api.workspace().to_path_buf();
    let files =
        tokio::task::spawn_blocking(move || test_files::scan(&ws, |p| protect.matches(p)).files)
            .await
            .map_err(|e| Error::Corrupt(format!("the test-file scan failed: {e}")))?;
    let protect = protected(api, &checks)?;
    api.write(|tx| {
        let now = tx.now();
        tx.conn().execute(
            "INSERT OR REPLACE INTO goal_baselines (goal_id, taken_at, weakened) VALUES (?1, ?2, '[]')",
            rusqlite::params![goal.id, now],
        )?;
        for f in &files {
            store_file(tx, &goal.id, f, protect.matches(&f.path))?;
        }
        Ok(())
    })?;
    crate::lifecycle::push_snapshot(api);
    Ok(())
}

fn store_file(tx: &mut Tx<'_>, goal_id: &str, f: &Scanned, protected: bool) -> Result<()> {
    tx.conn().execute(
        "INSERT OR REPLACE INTO goal_baseline_files \
         (goal_id, path, sha256, tests, skips, asserts, is_test, protected, content) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
        rusqlite::params![
            goal_id,
            f.path,
            f.sha256,
            f.tally.tests as i64,
            f.tally.skips as i64,
            f.tally.asserts as i64,
            f.is_test,
            protected,
            f.content,
        ],
    )?;
    Ok(())
}

/// The protected files a running file-tool call writes that were as the baseline holds
/// them when it started, by call id: only those take the call's result as their new
/// baseline (G-52). A file changed some other way first keeps its finding, even when the
/// user then allows an edit of it (the question showed only the edit).
#[derive(Default)]
pub(crate) struct PendingAccepts(std::sync::Mutex<BTreeMap<String, Vec<String>>>);

/// The active goal with a baseline, and the protected files `call` writes (relative to the
/// workspace), when it is a file tool's call (the shell, a tool server's tools, and tools
/// that only read are not: their arguments name no file they write).
fn protected_targets(
    api: &SessionApi,
    call: &waymark_protocol::ToolCallRecord,
) -> Result<Option<(String, Vec<String>)>> {
    let Some(tool) = api
        .tool(&call.name)
        .filter(|t| t.effects().writes && !t.effects().processes && !t.effects().external)
    else {
        return Ok(None);
    };
    let paths = tool.written_paths(&call.arguments);
    if paths.is_empty() {
        return Ok(None);
    }
    let Some(goal) = api
        .read(|c| crate::db::current_goal(c, api.id()))?
        .filter(|g| g.status == waymark_protocol::GoalStatus::Active)
    else {
        return Ok(None);
    };
    if !api.read(|c| has_baseline(c, &goal.id))? {
        return Ok(None);
    }
    let Ok(ws) = api.workspace().canonicalize() else {
        return Ok(None);
    };
    let rels = paths
        .iter()
        .filter_map(|p| waymark_tools::fs_policy::resolve_target(&ws, p).ok())
        .filter_map(|t| {
            t.strip_prefix(&ws)
                .ok()
                .and_then(|r| r.to_str())
                .map(str::to_string)
        })
        .filter(|rel| protected_now(api, rel).is_some())
        .collect();
    Ok(Some((goal.id, rels)))
}

/// Before an allowed file-tool call runs (the guard asked about each protected file it
/// writes): notes which of those files are still as the baseline holds them.
pub(crate) fn before_write(
    api: &SessionApi,
    call: &waymark_protocol::ToolCallRecord,
) -> Result<()> {
    let Some((goal_id, rels)) = protected_targets(api, call)? else {
        return Ok(());
    };
    let base = api.read(|c| base_files(c, &goal_id))?;
    let clean: Vec<String> = rels
        .into_iter()
        .filter(|rel| {
            let now = test_files::read_one(api.workspace(), rel).map(|f| f.sha256);
            let then = base
                .iter()
                .find(|b| &b.path == rel)
                .map(|b| b.sha256.clone());
            now == then
        })
        .collect();
    if !clean.is_empty() {
        api.state::<PendingAccepts>()
            .0
            .lock()
            .map_err(|_| Error::Corrupt("the pending accepts lock is poisoned".into()))?
            .insert(call.id.clone(), clean);
    }
    Ok(())
}

/// After a file-tool call: each protected file it wrote on the user's word (the guard asked;
/// no grant covers one), unchanged before it, takes its new state as the baseline's, so the
/// claim does not name the change again.
pub(crate) fn after_write(
    api: &SessionApi,
    call: &waymark_protocol::ToolCallRecord,
    ok: bool,
) -> Result<()> {
    let clean = api
        .state::<PendingAccepts>()
        .0
        .lock()
        .map_err(|_| Error::Corrupt("the pending accepts lock is poisoned".into()))?
        .remove(&call.id);
    let (Some(clean), true) = (clean, ok) else {
        return Ok(());
    };
    let Some((goal_id, _)) = protected_targets(api, call)? else {
        return Ok(());
    };
    for rel in clean {
        accept_write(api, &goal_id, &rel)?;
    }
    Ok(())
}

fn accept_write(api: &SessionApi, goal_id: &str, rel: &str) -> Result<()> {
    let now = test_files::read_one(api.workspace(), rel);
    api.write(|tx| {
        match &now {
            Some(f) => store_file(tx, goal_id, f, true)?,
            None => {
                tx.conn().execute(
                    "DELETE FROM goal_baseline_files WHERE goal_id = ?1 AND path = ?2",
                    rusqlite::params![goal_id, rel],
                )?;
            }
        }
        Ok(())
    })
}

/// One file of the baseline.
struct BaseFile {
    path: String,
    sha256: String,
    tally: test_files::Tally,
    is_test: bool,
    protected: bool,
    content: Option<String>,
}

fn base_files(conn: &rusqlite::Connection, goal_id: &str) -> Result<Vec<BaseFile>> {
    let mut st = conn.prepare(
        "SELECT path, sha256, tests, skips, asserts, is_test, protected, content \
         FROM goal_baseline_files WHERE goal_id = ?1 ORDER BY path",
    )?;
    let rows = st.query_map([goal_id], |r| {
        Ok(BaseFile {
            path: r.get(0)?,
            sha256: r.get(1)?,
            tally: test_files::Tally {
                tests: r.get::<_, i64>(2)?.max(0) as u64,
                skips: r.get::<_, i64>(3)?.max(0) as u64,
                asserts: r.get::<_, i64>(4)?.max(0) as u64,
            },
            is_test: r.get(5)?,
            protected: r.get(6)?,
            content: r.get(7)?,
        })
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The baseline run of each check: command → tests it ran, where its runner said.
fn base_runs(conn: &rusqlite::Connection, goal_id: &str) -> Result<Vec<(String, Option<u64>)>> {
    let mut st = conn.prepare(
        "SELECT command, passed, failed FROM goal_check_runs \
         WHERE goal_id = ?1 AND baseline = 1 ORDER BY id",
    )?;
    let rows = st.query_map([goal_id], |r| {
        let passed: Option<i64> = r.get(1)?;
        let failed: Option<i64> = r.get(2)?;
        Ok((
            r.get::<_, String>(0)?,
            passed.map(|p| (p.max(0) + failed.unwrap_or(0).max(0)) as u64),
        ))
    })?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

/// The test and protected files as they are now, path → hash: taken before a claim's checks
/// run, so the verdict can tell whether they changed while the checks ran.
pub(crate) async fn hashes_now(api: &SessionApi, checks: &[String]) -> Result<Hashes> {
    let protect = protected(api, checks)?;
    let ws = api.workspace().to_path_buf();
    tokio::task::spawn_blocking(move || {
        hashes(&test_files::scan(&ws, |p| protect.matches(p)).files)
    })
    .await
    .map_err(|e| Error::Corrupt(format!("the test-file scan failed: {e}")))
}

/// Files by path, with their hashes.
pub(crate) type Hashes = BTreeMap<String, String>;

fn hashes(files: &[Scanned]) -> Hashes {
    files
        .iter()
        .map(|f| (f.path.clone(), f.sha256.clone()))
        .collect()
}

/// What weakened the checks since the baseline, as plain sentences (empty: nothing, or no
/// baseline was taken). `runs` are the claim's runs of the goal's checks.
pub(crate) async fn weakened(
    api: &SessionApi,
    goal_id: &str,
    checks: &[String],
    runs: &[CheckRun],
    before: Hashes,
    touched: std::collections::BTreeSet<String>,
) -> Result<Vec<String>> {
    let (taken, base_runs, base_files) = api.read(|c| {
        Ok((
            has_baseline(c, goal_id)?,
            base_runs(c, goal_id)?,
            base_files(c, goal_id)?,
        ))
    })?;
    if !taken {
        return Ok(Vec::new());
    }
    let protect = protected(api, checks)?;
    let ws = api.workspace().to_path_buf();
    let runs = runs_owned(runs);
    tokio::task::spawn_blocking(move || {
        let mut found = compare(&ws, &protect, &base_runs, &base_files, &runs);
        // What the checks saw must be what is judged: a file that changed while they ran
        // (a process left behind, swapping a test in and out) is named.
        let after = hashes(&test_files::scan(&ws, |p| protect.matches(p)).files);
        // Also what was written and put back while they ran: a test or protected file, by
        // what it was before or is now, or by its name.
        let judged = |p: &String| {
            before.contains_key(p)
                || after.contains_key(p)
                || protect.matches(p)
                || test_files::read_one(&ws, p).is_some_and(|s| s.is_test)
        };
        let moved: Vec<&String> = before
            .keys()
            .chain(after.keys())
            .filter(|p| before.get(*p) != after.get(*p))
            .chain(touched.iter().filter(|p| judged(p)))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        for p in moved {
            found.push(format!(
                "`{p}` changed while the checks ran (something the agent started is still at work?)"
            ));
        }
        found
    })
    .await
    .map_err(|e| Error::Corrupt(format!("the weakened-check comparison failed: {e}")))
}

/// A claim's runs as the comparison needs them: command → tests it ran, if it said.
fn runs_owned(runs: &[CheckRun]) -> Vec<(String, Option<u64>)> {
    runs.iter()
        .map(|r| (r.command.clone(), r.counts.map(|c| c.ran())))
        .collect()
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn compare(
    ws: &std::path::Path,
    protect: &Protected,
    base_runs: &[(String, Option<u64>)],
    base_files: &[BaseFile],
    runs: &[(String, Option<u64>)],
) -> Vec<String> {
    let mut found = Vec::new();
    for (command, base) in base_runs {
        let Some(base) = base else { continue };
        match runs.iter().find(|(c, _)| c == command) {
            None => found.push(format!("the check `{command}` no longer runs")),
            Some((_, None)) => found.push(format!(
                "`{command}` ran {} at the start and now reports none",
                plural(*base, "test", "tests")
            )),
            Some((_, Some(now))) if now < base => found.push(format!(
                "`{command}` ran {} at the start and {now} now",
                plural(*base, "test", "tests")
            )),
            Some(_) => {}
        }
    }
    let scan = test_files::scan(ws, |p| protect.matches(p));
    if let Some(why) = scan.incomplete {
        // What was left out could hide anything: not complete on its strength.
        found.push(format!("the test files could not all be compared: {why}"));
    }
    let now: BTreeMap<String, Scanned> = scan
        .files
        .into_iter()
        .map(|s| (s.path.clone(), s))
        .collect();
    for b in base_files {
        let current = now
            .get(&b.path)
            .cloned()
            .or_else(|| test_files::read_one(ws, &b.path));
        if b.protected {
            match &current {
                None => found.push(format!("the protected file `{}` was deleted", b.path)),
                Some(c) if c.sha256 != b.sha256 => found.push(format!(
                    "the protected file `{}` was changed without your approval",
                    b.path
                )),
                Some(_) => {}
            }
        }
        if !b.is_test {
            continue;
        }
        let Some(c) = current else {
            if !b.protected {
                found.push(format!(
                    "the test file `{}` was deleted (it held {})",
                    b.path,
                    plural(b.tally.tests, "test", "tests")
                ));
            }
            continue;
        };
        let (was, is) = (b.tally, c.tally);
        if is.tests < was.tests {
            found.push(format!(
                "`{}` holds {} now, {} at the start",
                b.path,
                plural(is.tests, "test", "tests"),
                was.tests
            ));
        }
        if is.skips > was.skips {
            found.push(format!(
                "`{}` gained {} (`#[ignore]`, `@pytest.mark.skip`, `.skip(`, `t.Skip`…)",
                b.path,
                plural(is.skips - was.skips, "skip marker", "skip markers")
            ));
        }
        if is.asserts < was.asserts {
            found.push(format!(
                "`{}` lost {} ({} at the start, {} now)",
                b.path,
                plural(was.asserts - is.asserts, "assertion", "assertions"),
                was.asserts,
                is.asserts
            ));
        }
    }
    for (path, s) in &now {
        if base_files.iter().any(|b| &b.path == path) {
            continue;
        }
        if protect.matches(path) {
            found.push(format!(
                "the protected file `{path}` was added without your approval"
            ));
        } else if s.is_test && s.tally.skips > 0 {
            found.push(format!(
                "the new test file `{path}` skips tests ({})",
                plural(s.tally.skips, "marker", "markers")
            ));
        }
    }
    found
}

/// The diff of the workspace's test files since the goal started, for the reviewer: at most
/// `max` characters, files whose text the baseline did not keep named without a diff.
pub(crate) fn test_diff(api: &SessionApi, goal_id: &str, max: usize) -> Result<String> {
    let base = api.read(|c| base_files(c, goal_id))?;
    let ws = api.workspace();
    let mut out = String::new();
    let mut seen = std::collections::BTreeSet::new();
    // Changed test files, those that lost tests or assertions or gained skips first: a
    // flood of harmless edits elsewhere must not push them out of the reviewer's view.
    let mut changed: Vec<(bool, &BaseFile, Option<Scanned>)> = Vec::new();
    for b in base.iter().filter(|b| b.is_test) {
        seen.insert(b.path.clone());
        let now = test_files::read_one(ws, &b.path);
        if now.as_ref().is_some_and(|n| n.sha256 == b.sha256) {
            continue;
        }
        let weaker = now.as_ref().is_none_or(|n| {
            n.tally.tests < b.tally.tests
                || n.tally.asserts < b.tally.asserts
                || n.tally.skips > b.tally.skips
        });
        changed.push((!weaker, b, now));
    }
    changed.sort_by_key(|(later, b, _)| (*later, b.path.clone()));
    for (_, b, now) in changed {
        let new_text = now.as_ref().and_then(|n| n.content.clone());
        match (&b.content, new_text) {
            (Some(old), new) => {
                let new = new.unwrap_or_default();
                let d = similar::TextDiff::from_lines(old.as_str(), new.as_str());
                out.push_str(
                    &d.unified_diff()
                        .context_radius(2)
                        .header(&format!("a/{}", b.path), &format!("b/{}", b.path))
                        .to_string(),
                );
            }
            (None, _) => out.push_str(&format!("{} changed (too large to show)\n", b.path)),
        }
        if out.len() > max {
            break;
        }
    }
    for s in test_files::scan(ws, |_| false).files {
        if !seen.contains(&s.path) && out.len() <= max {
            out.push_str(&format!("{} is new since the goal started\n", s.path));
        }
    }
    if out.len() > max {
        let cut: String = out.chars().take(max).collect();
        out = format!("{cut}\n… (cut)");
    }
    Ok(out)
}

/// Why `rel` may be written only on the user's word while the session's goal is active
/// (G-52); `None` when it may be written as the mode allows. Anything that cannot be read
/// protects it (the safe side).
pub(crate) fn protected_now(api: &waymark_extension::SessionApi, rel: &str) -> Option<String> {
    let read = api.read(|c| {
        let goal = crate::db::current_goal(c, api.id())?
            .filter(|g| g.status == waymark_protocol::GoalStatus::Active);
        match goal {
            Some(g) => Ok(Some(crate::check_records::checks_of(c, &g.id)?)),
            None => Ok(None),
        }
    });
    let checks = match read {
        Ok(Some(checks)) => checks,
        Ok(None) => return None,
        Err(e) => {
            return Some(format!(
                "the goal could not be read ({e}), so every write asks"
            ));
        }
    };
    match protected(api, &checks) {
        Ok(p) if p.matches(rel) => Some(format!(
            "`{}` is protected while the goal runs: its checks, CI files and goal.protect decide when it is done, so only you may change them",
            waymark_protocol::display::escape_line(rel)
        )),
        Ok(_) => None,
        Err(e) => Some(format!(
            "{e}; until it is fixed, every write asks while the goal runs"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_files::Tally;

    fn base(path: &str, text: &str, ws: &std::path::Path) -> BaseFile {
        let s = test_files::read_one(ws, path).unwrap();
        assert_eq!(s.content.as_deref(), Some(text));
        BaseFile {
            path: path.into(),
            sha256: s.sha256,
            tally: s.tally,
            is_test: s.is_test,
            protected: false,
            content: s.content,
        }
    }

    #[test]
    fn each_kind_of_weakening_is_named_and_an_unchanged_tree_names_none() {
        let ws = tempfile::tempdir().unwrap();
        let w = ws.path();
        std::fs::create_dir_all(w.join("tests")).unwrap();
        let a = "#[test]\nfn a() { assert_eq!(1, 1); assert!(true); }\n#[test]\nfn b() {}\n";
        let gone = "#[test]\nfn c() {}\n";
        std::fs::write(w.join("tests/a.rs"), a).unwrap();
        std::fs::write(w.join("tests/gone.rs"), gone).unwrap();
        std::fs::write(w.join("ci.sh"), "exit 0\n").unwrap();
        let protect = Protected::new(&["ci.sh".into()], &[], w).unwrap();
        // In path order, as the store gives them.
        let ci = test_files::read_one(w, "ci.sh").unwrap();
        let mut files = vec![BaseFile {
            path: "ci.sh".into(),
            sha256: ci.sha256,
            tally: Tally::default(),
            is_test: false,
            protected: true,
            content: ci.content,
        }];
        files.push(base("tests/a.rs", a, w));
        files.push(base("tests/gone.rs", gone, w));
        let runs = vec![("cargo test".to_string(), Some(3))];
        assert_eq!(
            compare(w, &protect, &runs, &files, &runs),
            Vec::<String>::new()
        );

        std::fs::write(
            w.join("tests/a.rs"),
            "#[test]\n#[ignore]\nfn a() { assert!(true); }\n",
        )
        .unwrap();
        std::fs::remove_file(w.join("tests/gone.rs")).unwrap();
        std::fs::write(w.join("ci.sh"), "true\n").unwrap();
        std::fs::write(w.join("tests/new.rs"), "#[test]\n#[ignore]\nfn n() {}\n").unwrap();
        let found = compare(
            w,
            &protect,
            &runs,
            &files,
            &[("cargo test".into(), Some(1))],
        );
        assert_eq!(
            found,
            [
                "`cargo test` ran 3 tests at the start and 1 now",
                "the protected file `ci.sh` was changed without your approval",
                "`tests/a.rs` holds 1 test now, 2 at the start",
                "`tests/a.rs` gained 1 skip marker (`#[ignore]`, `@pytest.mark.skip`, `.skip(`, `t.Skip`…)",
                "`tests/a.rs` lost 1 assertion (2 at the start, 1 now)",
                "the test file `tests/gone.rs` was deleted (it held 1 test)",
                "the new test file `tests/new.rs` skips tests (1 marker)",
            ]
        );
        let gone_check = compare(w, &protect, &runs, &files, &[("cargo test".into(), None)]);
        assert_eq!(
            gone_check[0],
            "`cargo test` ran 3 tests at the start and now reports none"
        );
    }
}
