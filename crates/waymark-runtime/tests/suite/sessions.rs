//! Renaming and deleting sessions: a deleted session leaves no row in any table (the plan's
//! and the goal's included) and no folder, and nothing of another session goes with it.

use super::harness::{Harness, run, user, waiting_on};
use super::plan::{answer, write_and_exit};
use super::red_team::plan_entry;
use serde_json::json;
use waymark_config::Config;
use waymark_protocol::{Answer, BudgetChange, PermissionMode};
use waymark_runtime::store::StoreError;

/// The number of rows of every table, by name.
fn counts(h: &Harness) -> Vec<(String, i64)> {
    h.runtime
        .store()
        .read(|c| {
            let tables: Vec<String> = c
                .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")?
                .query_map([], |r| r.get(0))?
                .collect::<Result<_, _>>()?;
            let mut out = Vec::new();
            for t in tables {
                let n: i64 =
                    c.query_row(&format!("SELECT COUNT(*) FROM \"{t}\""), [], |r| r.get(0))?;
                out.push((t, n));
            }
            Ok::<_, StoreError>(out)
        })
        .unwrap()
}

/// The window drops a session it left blank by asking the app, which decides in the step
/// that deletes it: one that got a message meanwhile (the window's belief is stale, or a
/// hostile page asks for any id) or a title is kept, whole; a blank one goes.
#[tokio::test]
async fn only_a_blank_session_is_dropped_whatever_the_window_believes() {
    let h = Harness::new(Config::default());
    let listed = |id: &str| {
        h.runtime
            .list_sessions()
            .unwrap()
            .iter()
            .any(|x| x.id == id)
    };
    let blank = h.session(json!({"responses": [{"text": "ok"}]}), PermissionMode::Ask);
    let blank_id = blank.id().to_string();
    // Open here: refused like any delete, and kept.
    assert!(h.runtime.delete_blank_session(&blank_id).is_err());
    blank.shutdown().await.unwrap();
    assert!(h.runtime.session_is_blank(&blank_id).unwrap());

    let said = h.session(json!({"responses": [{"text": "ok"}]}), PermissionMode::Ask);
    run(&said, user("hello")).await;
    let said_id = said.id().to_string();
    said.shutdown().await.unwrap();
    let titled = h.session(json!({"responses": [{"text": "ok"}]}), PermissionMode::Ask);
    let titled_id = titled.id().to_string();
    titled.shutdown().await.unwrap();
    h.runtime.rename_session(&titled_id, "Ideas").unwrap();

    // Put in plan mode with nothing else yet (a plan may be being written): kept.
    let drafting = h.session(json!({"responses": [{"text": "ok"}]}), PermissionMode::Ask);
    let drafting_id = drafting.id().to_string();
    drafting.shutdown().await.unwrap();
    h.runtime
        .store()
        .write(1, |tx| {
            tx.conn().execute(
                "UPDATE sessions SET interaction_mode = 'plan' WHERE id = ?1",
                [&drafting_id],
            )?;
            Ok::<_, StoreError>(())
        })
        .unwrap();
    // Out of plan mode, but a file is in its folder: kept too.
    let filed = h.session(json!({"responses": [{"text": "ok"}]}), PermissionMode::Ask);
    let filed_id = filed.id().to_string();
    filed.shutdown().await.unwrap();
    let draft = h.session_dir(&filed_id).join("artifacts/plan.md");
    std::fs::write(&draft, "# My own notes\n").unwrap();

    let before = counts(&h);
    for id in [&said_id, &titled_id, &drafting_id, &filed_id] {
        assert!(!h.runtime.session_is_blank(id).unwrap(), "{id}");
        assert!(!h.runtime.delete_blank_session(id).unwrap(), "{id}");
        assert!(listed(id), "{id}");
    }
    assert_eq!(counts(&h), before, "nothing of a kept session went");
    assert!(draft.exists());
    assert!(h.runtime.delete_blank_session(&blank_id).unwrap());
    assert!(!listed(&blank_id));
    assert!(!h.runtime.session_is_blank(&blank_id).unwrap(), "gone");
}

#[tokio::test]
async fn a_deleted_session_leaves_no_row_anywhere_and_no_folder() {
    let h = Harness::new(Config::default());
    // Another session, with a goal of its own: nothing of it may go.
    let kept = h.session(json!({"responses": [{"text": "ok"}]}), PermissionMode::Auto);
    run(&kept, user("/goal keep me")).await;
    let kept_id = kept.id().to_string();
    kept.shutdown().await.unwrap();
    let before = counts(&h);

    // The session to delete: a plan, reviewed and approved as a goal, turns, events.
    let plan = "## Summary\nRename it.\n\n## Steps\n1. Rename.\n2. Test.\n";
    let s = h.session(
        json!({"responses": [write_and_exit(plan), {"text": "Done."}], "when_exhausted": "repeat_last"}),
        PermissionMode::AutoEdit,
    );
    let q = waiting_on(&run(&s, plan_entry("plan the rename")).await);
    run(
        &s,
        answer(
            &q,
            Answer::Approve {
                option: None,
                as_goal: Some(BudgetChange::default()),
                handed_to: None,
            },
        ),
    )
    .await;
    let id = s.id().to_string();
    let folder = h.session_dir(&id);
    assert!(folder.join("artifacts/plan.md").exists());
    let grown = counts(&h);
    for t in [
        "plans",
        "plan_revisions",
        "blobs",
        "goals",
        "turns",
        "events",
    ] {
        let n = |c: &[(String, i64)]| c.iter().find(|(n, _)| n == t).map_or(0, |x| x.1);
        assert!(
            n(&grown) > n(&before),
            "{t}: the session made no row to delete"
        );
    }

    // While it is open here, it is not deleted.
    let e = h.runtime.delete_session(&id).unwrap_err().to_string();
    assert!(e.contains("close it first"), "{e}");
    // With a code of its own, which the window waits on.
    let code = h.runtime.delete_session(&id).unwrap_err().code();
    assert_eq!(code, "session_open_here");
    s.shutdown().await.unwrap();

    h.runtime.delete_session(&id).unwrap();
    assert_eq!(
        counts(&h),
        before,
        "rows of the deleted session are left, or others went"
    );
    assert!(!folder.exists(), "its folder is left");
    assert!(
        h.runtime
            .list_sessions()
            .unwrap()
            .iter()
            .all(|x| x.id != id)
    );
    assert_eq!(
        h.runtime.delete_session(&id).unwrap_err().code(),
        "session_not_found"
    );
    // The other session opens as it was.
    let again = h
        .runtime
        .open_session(&kept_id, Default::default())
        .unwrap();
    assert!(h.runtime.snapshot(again.id()).is_ok());
    again.shutdown().await.unwrap();
}

/// A name that is not a session's id never reaches the file system: no folder outside the
/// sessions' is removed, whatever the name says.
#[tokio::test]
async fn a_hostile_id_deletes_nothing() {
    let h = Harness::new(Config::default());
    let s = h.session(json!({"responses": [{"text": "ok"}]}), PermissionMode::Auto);
    run(&s, user("hi")).await;
    let id = s.id().to_string();
    s.shutdown().await.unwrap();
    let data = h.dir.path().join("data");
    // Rows under those names, as a corrupt or hostile database could hold: still nothing
    // outside a session's own folder is touched.
    h.runtime
        .store()
        .write(1, |tx| {
            for id in ["..", "x/../../.."] {
                tx.conn().execute(
                    "INSERT INTO sessions (id, workspace_id, created_at, updated_at) SELECT ?1, workspace_id, 0, 0 FROM sessions LIMIT 1",
                    [id],
                )?;
            }
            Ok::<_, StoreError>(())
        })
        .unwrap();
    let before = counts(&h);
    for id in ["..", "../..", ".", "", "sessions/../..", "/", "x/../../.."] {
        let e = h.runtime.delete_session(id).unwrap_err();
        assert_eq!(e.code(), "session_not_found", "{id}: {e}");
    }
    assert!(data.join("sessions").join(&id).exists());
    assert!(data.join("waymark.db").exists());
    assert_eq!(counts(&h), before);
}

#[tokio::test]
async fn a_session_is_renamed_and_bad_titles_are_refused() {
    let h = Harness::new(Config::default());
    let s = h.session(json!({"responses": [{"text": "ok"}]}), PermissionMode::Auto);
    run(&s, user("first words")).await;
    let title = |h: &Harness| {
        h.runtime.list_sessions().unwrap()[0]
            .title
            .clone()
            .unwrap_or_default()
    };
    assert_eq!(title(&h), "first words");
    // A newer session is listed first, and renaming the older one does not move it up.
    let newer = h.session(json!({"responses": [{"text": "ok"}]}), PermissionMode::Auto);
    run(&newer, user("second")).await;
    let order = |h: &Harness| -> Vec<String> {
        h.runtime
            .list_sessions()
            .unwrap()
            .into_iter()
            .map(|x| x.id)
            .collect()
    };
    let before = order(&h);
    assert_eq!(before[0], newer.id());
    h.runtime.rename_session(s.id(), "  Retry logic  ").unwrap();
    assert_eq!(order(&h), before, "a rename is not activity");
    let title = |h: &Harness| {
        h.runtime
            .list_sessions()
            .unwrap()
            .into_iter()
            .find(|x| x.id == s.id())
            .and_then(|x| x.title)
            .unwrap_or_default()
    };
    assert_eq!(title(&h), "Retry logic");
    for bad in [
        "",
        "   ",
        "two\nlines",
        &"x".repeat(201),
        "invoice\u{202e}fdp.exe",
        "a\u{200b}b",
        "a\u{2028}b",
    ] {
        let e = h.runtime.rename_session(s.id(), bad).unwrap_err();
        assert_eq!(e.code(), "refused", "{bad:?}: {e}");
    }
    assert_eq!(title(&h), "Retry logic");
    assert_eq!(
        h.runtime.rename_session("s-none", "x").unwrap_err().code(),
        "session_not_found"
    );
    newer.shutdown().await.unwrap();
    s.shutdown().await.unwrap();
}

/// A session is found by what was said in it, the user's words or the agent's, whatever the
/// case; `%` and `_` are plain characters. A blank search finds nothing, an overlong one is
/// refused.
#[tokio::test]
async fn sessions_are_found_by_their_messages_and_the_agents_replies() {
    let h = Harness::new(Config::default());
    let asked = h.session(
        json!({"responses": [{"text": "Looking into it."}]}),
        PermissionMode::Auto,
    );
    run(&asked, user("Why does the 100%_CPU spin happen?")).await;
    let answered = h.session(
        json!({"responses": [{"text": "The Retry Loop never backs off."}]}),
        PermissionMode::Auto,
    );
    run(&answered, user("what is wrong")).await;
    let search = |q: &str| h.runtime.search_sessions(q).unwrap();

    assert_eq!(search("retry loop"), [answered.id()]);
    assert_eq!(search("  100%_cpu "), [asked.id()]);
    assert_eq!(search("%"), [asked.id()]);
    assert_eq!(search("looking into"), [asked.id()]);
    let mut both = search("the");
    both.sort();
    let mut ids = vec![asked.id().to_string(), answered.id().to_string()];
    ids.sort();
    assert_eq!(both, ids);
    assert!(search("nowhere said").is_empty());
    assert!(search("").is_empty());
    assert!(search("   ").is_empty());
    assert!(search(&"x".repeat(200)).is_empty());
    let e = h.runtime.search_sessions(&"x".repeat(201)).unwrap_err();
    assert_eq!(e.code(), "refused", "{e}");
    answered.shutdown().await.unwrap();
    asked.shutdown().await.unwrap();
}
