//! G-49, G-50: a goal is complete when its checks pass, run by the runtime on real test
//! runners (cargo test, pytest) in the goal's scratch shell, and the workspace is unchanged
//! by them.

use super::*;

/// A Rust crate whose one test fails until `add` adds.
fn rust_crate(ws: &std::path::Path) {
    std::fs::write(
        ws.join("Cargo.toml"),
        "[package]\nname = \"adder\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::create_dir_all(ws.join("src")).unwrap();
    std::fs::write(ws.join("src/lib.rs"), LIB_WRONG).unwrap();
}

const LIB_WRONG: &str = "pub fn add(a: i32, b: i32) -> i32 {\n    a - b\n}\n\n#[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(2, 2), 4, \"two and two\");\n    }\n\n    #[test]\n    fn zero() {\n        assert_eq!(super::add(0, 0), 0);\n    }\n}\n";

fn fix(path: &str, content: &str) -> Value {
    json!({"text": "fixing", "tool_calls": [{"name": "write", "arguments": {"path": path, "content": content}}]})
}

/// Every entry under `dir` with its content, for "unchanged" comparisons.
fn tree(dir: &std::path::Path) -> Vec<(String, Vec<u8>)> {
    let mut v = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            if e.file_type().unwrap().is_dir() {
                todo.push(p);
                v.push((rel, Vec::new()));
            } else {
                v.push((rel, std::fs::read(&p).unwrap_or_default()));
            }
        }
    }
    v.sort();
    v
}

fn checks_of(ev: &[waymark_protocol::Event]) -> Vec<Ran> {
    ev.iter()
        .filter_map(|e| match &e.kind {
            EventKind::GoalCheck {
                exit_code,
                passed,
                failed,
                tail,
                ..
            } => Some((*exit_code, *passed, *failed, tail.clone())),
            _ => None,
        })
        .collect()
}

/// A check's run as its event says: exit code, tests passed, failed, and its output's end.
type Ran = (Option<i32>, Option<u32>, Option<u32>, String);

/// The model claims complete while a test fails: not complete, and the failure is in the
/// next request; it fixes the code and claims again: complete on the checks, and the
/// workspace has no build output in it.
#[tokio::test]
async fn g_49_a_failing_cargo_test_keeps_the_goal_active_and_a_passing_one_completes_it() {
    let (h, rec) = Harness::recording(
        config(Verification::None),
        json!({"responses": [
            claim("done, I think"),
            fix("src/lib.rs", &LIB_WRONG.replace("a - b", "a + b")),
            claim("fixed the sign"),
        ]}),
    );
    rust_crate(&h.ws);
    let before = tree(&h.ws);
    let s = h.recorded_session(PermissionMode::Auto);
    let ev = run(
        &s,
        user("/goal make add add check=\"cargo test --offline\""),
    )
    .await;
    let g = goal(&h, &s);
    let runs = checks_of(&ev);
    assert_eq!(
        status(&g),
        (GoalStatus::Complete, GoalReason::ChecksPassed),
        "{runs:?}"
    );
    // The baseline before the first turn, the failing claim, the passing one.
    assert_eq!(runs.len(), 3, "{runs:?}");
    for r in &runs[..2] {
        assert_eq!((r.0, r.1, r.2), (Some(101), Some(1), Some(1)), "{}", r.3);
    }
    assert_eq!(
        (runs[2].0, runs[2].1, runs[2].2),
        (Some(0), Some(2), Some(0)),
        "{}",
        runs[2].3
    );
    // The gauge's numbers: the baseline and the runs since.
    let c = &g.checks[0];
    assert_eq!(c.baseline.and_then(|b| b.passed), Some(1));
    assert_eq!(
        c.runs.iter().map(|r| r.passed).collect::<Vec<_>>(),
        [Some(1), Some(2)]
    );
    // `/goal` (and `waymark goal show`) says the same in words.
    let shown = run(&s, user("/goal")).await;
    let text = shown
        .iter()
        .find_map(|e| match &e.kind {
            EventKind::CommandOutput { text, .. } => Some(text.clone()),
            _ => None,
        })
        .unwrap();
    assert!(
        text.contains(
            "Check: cargo test --offline — 2/2 tests passing (at the start: 1/2 tests passing)"
        ),
        "{text}"
    );
    let reqs = rec.requests.lock().unwrap().clone();
    assert!(
        reqs.iter().any(|r| r.messages.iter().any(|m| matches!(m,
            ModelMessage::User { text, .. } if text.contains("these fail: `cargo test --offline`") && text.contains("two and two")))),
        "the failing test's output is in the next continuation"
    );
    // The build happened in the goal's scratch layer: no `target/` (nor Cargo.lock) here.
    let after = tree(&h.ws);
    let changed: Vec<&String> = after
        .iter()
        .filter(|e| !before.contains(e))
        .map(|(p, _)| p)
        .collect();
    assert_eq!(
        changed,
        ["src/lib.rs"],
        "only the agent's fix changed the workspace"
    );
    s.shutdown().await.unwrap();
}

/// A check that hangs is killed at its limit, with what it started; the goal goes on (it is
/// not complete), and the next check run works.
#[tokio::test]
async fn g_49_a_hanging_check_is_killed_at_its_limit_and_the_goal_goes_on() {
    let mut c = config(Verification::None);
    c.goal.check_timeout = Some(1);
    let h = Harness::new(c);
    let s = h.session(
        json!({"responses": [claim("done")], "when_exhausted": "repeat_last"}),
        PermissionMode::Auto,
    );
    let ev = run(&s, user("/goal wait for it check=\"sleep 30 & sleep 30\"")).await;
    let runs = checks_of(&ev);
    assert!(!runs.is_empty());
    assert_eq!(runs[0].0, None, "{runs:?}");
    let g = goal(&h, &s);
    assert_ne!(g.status, GoalStatus::Complete);
    s.shutdown().await.unwrap();
}

/// The pytest this checkout installed (`scripts/setup.sh`, tests/checks).
fn pytest_site() -> std::path::PathBuf {
    let site = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/checks/site");
    assert!(
        site.join("pytest").exists(),
        "pytest is installed by scripts/setup.sh into {}",
        site.display()
    );
    site.canonicalize().unwrap()
}

fn bash(command: &str) -> Value {
    json!({"text": "running", "tool_calls": [{"name": "bash", "arguments": {"command": command}}]})
}

/// G-50: plan mode builds and runs the project's tests (cargo test, pytest), which write
/// their build output and caches, and the workspace is unchanged afterwards.
#[tokio::test]
async fn g_50_plan_mode_runs_cargo_test_and_pytest_and_the_workspace_is_unchanged() {
    let site = pytest_site();
    let mut c = Config::default();
    c.sandbox.read_allow = vec![site.display().to_string()];
    c.sandbox.scratch_shell = true;
    let h = Harness::new(c);
    rust_crate(&h.ws);
    std::fs::write(h.ws.join("src/lib.rs"), LIB_WRONG.replace("a - b", "a + b")).unwrap();
    std::fs::create_dir_all(h.ws.join("tests")).unwrap();
    std::fs::write(
        h.ws.join("tests/test_math.py"),
        "def test_add():\n    assert 1 + 1 == 2\n\ndef test_sub():\n    assert 2 - 1 == 1\n",
    )
    .unwrap();
    let before = tree(&h.ws);
    let s = h.session(
        json!({"responses": [
            bash("cargo test --offline 2>&1 | grep \"test result\""),
            bash(&format!("PYTHONPATH={} python3 -m pytest tests 2>&1 | tail -2; ls -a", site.display())),
            {"text": "investigated"},
        ]}),
        PermissionMode::Auto,
    );
    let ev = run(
        &s,
        super::super::red_team::plan_entry("look into the tests"),
    )
    .await;
    let r = results(&ev);
    assert_eq!(r.len(), 2, "{r:?}");
    assert_eq!(r[0].1, ToolStatus::Ok, "{}", r[0].2);
    assert!(r[0].2.contains("test result: ok. 2 passed"), "{}", r[0].2);
    assert_eq!(r[1].1, ToolStatus::Ok, "{}", r[1].2);
    assert!(r[1].2.contains("2 passed"), "{}", r[1].2);
    assert!(
        r[1].2.contains(".pytest_cache"),
        "pytest wrote its cache: {}",
        r[1].2
    );
    assert_eq!(
        tree(&h.ws),
        before,
        "the workspace is byte for byte as it was"
    );
    s.shutdown().await.unwrap();
}

/// A goal whose checks fail at first, then pass only because the worker weakened them: it
/// pauses `checks_weakened`, naming what changed, and is not complete. `setup` makes the
/// project; `weaken` is the worker's change. Returns the goal and the session's events.
async fn weakened_case(
    checks: &str,
    config: Config,
    setup: impl FnOnce(&std::path::Path),
    weaken: Value,
) -> (GoalSnapshot, Vec<waymark_protocol::Event>) {
    let h = Harness::new(config);
    setup(&h.ws);
    let s = h.session(
        json!({"responses": [claim("done"), weaken, claim("all checks pass now")]}),
        PermissionMode::Auto,
    );
    let ev = run(&s, user(&format!("/goal make the tests pass {checks}"))).await;
    let g = goal(&h, &s);
    s.shutdown().await.unwrap();
    (g, ev)
}

fn assert_weakened(g: &GoalSnapshot, ev: &[waymark_protocol::Event], expected: &[&str]) {
    let runs = checks_of(ev);
    assert_eq!(
        status(g),
        (GoalStatus::Paused, GoalReason::ChecksWeakened),
        "{runs:?} {:?}",
        g.weakened
    );
    assert_eq!(
        runs.last().map(|r| r.0),
        Some(Some(0)),
        "the checks passed: {runs:?}"
    );
    for e in expected {
        assert!(
            g.weakened.iter().any(|w| w.contains(e)),
            "`{e}` is not named: {:?}",
            g.weakened
        );
    }
    // The pause says the same in the log.
    assert!(ev.iter().any(|e| matches!(&e.kind,
        EventKind::GoalUpdate { reason: GoalReason::ChecksWeakened, findings, .. } if **findings == *g.weakened)));
}

/// G-51 with cargo test: an `#[ignore]` on the failing test, or its assertion gutted, makes
/// the check pass, and neither completes the goal.
#[tokio::test]
async fn g_51_an_ignored_or_gutted_cargo_test_does_not_complete_the_goal() {
    let ignored = LIB_WRONG.replace(
        "    #[test]\n    fn adds",
        "    #[test]\n    #[ignore]\n    fn adds",
    );
    let (g, ev) = weakened_case(
        "check=\"cargo test --offline\"",
        config(Verification::None),
        rust_crate,
        fix("src/lib.rs", &ignored),
    )
    .await;
    assert_weakened(
        &g,
        &ev,
        &[
            "`cargo test --offline` ran 2 tests at the start and 1 now",
            "`src/lib.rs` gained 1 skip marker",
        ],
    );
    let gutted = LIB_WRONG.replace(
        "assert_eq!(super::add(2, 2), 4, \"two and two\");",
        "let _ = super::add(2, 2);",
    );
    let (g, ev) = weakened_case(
        "check=\"cargo test --offline\"",
        config(Verification::None),
        rust_crate,
        fix("src/lib.rs", &gutted),
    )
    .await;
    assert_weakened(
        &g,
        &ev,
        &["`src/lib.rs` lost 1 assertion (2 at the start, 1 now)"],
    );
}

/// A Python package with a passing test file and a failing one.
fn python_package(ws: &std::path::Path) {
    std::fs::create_dir_all(ws.join("tests")).unwrap();
    std::fs::write(
        ws.join("tests/test_math.py"),
        "def test_add():\n    assert 1 + 1 == 2\n",
    )
    .unwrap();
    std::fs::write(
        ws.join("tests/test_bad.py"),
        "def test_sub():\n    assert 2 - 1 == 2\n",
    )
    .unwrap();
}

fn pytest_config() -> Config {
    let mut c = config(Verification::None);
    c.sandbox.read_allow = vec![pytest_site().display().to_string()];
    c
}

fn pytest_check() -> String {
    format!(
        "check=\"PYTHONPATH={} python3 -m pytest -q tests\"",
        pytest_site().display()
    )
}

/// G-51 with pytest: a `@pytest.mark.skip` on the failing test, or its file deleted.
#[tokio::test]
async fn g_51_a_skipped_or_deleted_pytest_test_does_not_complete_the_goal() {
    let (g, ev) = weakened_case(
        &pytest_check(),
        pytest_config(),
        python_package,
        fix(
            "tests/test_bad.py",
            "import pytest\n\n@pytest.mark.skip(reason=\"later\")\ndef test_sub():\n    assert 2 - 1 == 2\n",
        ),
    )
    .await;
    assert_weakened(
        &g,
        &ev,
        &[
            "ran 2 tests at the start and 1 now",
            "`tests/test_bad.py` gained 1 skip marker",
        ],
    );
    let (g, ev) = weakened_case(
        &pytest_check(),
        pytest_config(),
        python_package,
        bash("rm tests/test_bad.py"),
    )
    .await;
    assert_weakened(
        &g,
        &ev,
        &["the test file `tests/test_bad.py` was deleted (it held 1 test)"],
    );
}

/// G-51 with node's test runner: the failing test removed from its file.
#[tokio::test]
async fn g_51_a_node_test_removed_does_not_complete_the_goal_and_a_real_fix_does() {
    let both = "import test from 'node:test';\nimport assert from 'node:assert';\n\ntest('adds', () => { assert.equal(1 + 1, 2); });\ntest('subtracts', () => { assert.equal(2 - 1, 2); });\n";
    let setup = |ws: &std::path::Path| {
        std::fs::write(ws.join("math.test.mjs"), both).unwrap();
    };
    let (g, ev) = weakened_case(
        "check=\"node --test\"",
        config(Verification::None),
        setup,
        fix(
            "math.test.mjs",
            "import test from 'node:test';\nimport assert from 'node:assert';\n\ntest('adds', () => { assert.equal(1 + 1, 2); });\n",
        ),
    )
    .await;
    assert_weakened(
        &g,
        &ev,
        &[
            "`node --test` ran 2 tests at the start and 1 now",
            "`math.test.mjs` holds 1 test now, 2 at the start",
            "`math.test.mjs` lost 1 assertion",
        ],
    );
    // Fixing the expectation honestly (same tests, same assertions) completes it.
    let (g, ev) = weakened_case(
        "check=\"node --test\"",
        config(Verification::None),
        setup,
        fix("math.test.mjs", &both.replace("2 - 1, 2", "2 - 1, 1")),
    )
    .await;
    assert_eq!(
        status(&g),
        (GoalStatus::Complete, GoalReason::ChecksPassed),
        "{:?} {:?}",
        g.weakened,
        checks_of(&ev)
    );
}

/// G-52: while the goal runs, a file tool's write to the script its check names asks the
/// user even in `auto`, showing the diff; the same write through a link to it asks too; a
/// shell command changing it is named at the claim; other files are written as `auto`
/// allows.
#[tokio::test]
async fn g_52_a_write_to_a_protected_path_asks_in_auto_and_a_shell_change_is_named() {
    let h = Harness::new(config(Verification::None));
    std::fs::write(h.ws.join("check.sh"), "#!/bin/sh\ntest -f done.txt\n").unwrap();
    let s = h.session(
        json!({"responses": [
            {"text": "working", "tool_calls": [
                {"name": "write", "arguments": {"path": "notes.txt", "content": "fine\n"}},
                {"name": "write", "arguments": {"path": "check.sh", "content": "#!/bin/sh\nexit 0\n"}},
            ]},
        ]}),
        PermissionMode::Auto,
    );
    let ev = run(
        &s,
        user("/goal make the check pass check=\"sh ./check.sh\""),
    )
    .await;
    let r = results(&ev);
    assert_eq!(r.first().map(|x| x.1), Some(ToolStatus::Ok), "{r:?}");
    let (_, q) = waymark_test_support::harness::permission_asked(&ev)
        .expect("the protected write asks in auto");
    assert!(
        q.summary.contains("check.sh") && q.summary.contains("protected"),
        "{}",
        q.summary
    );
    assert!(q.git, "no grant is offered for it");
    assert!(q.grants.session.is_none());
    assert_eq!(q.files.len(), 1);
    assert!(
        q.files[0]
            .diff
            .as_deref()
            .is_some_and(|d| d.contains("+exit 0")),
        "{:?}",
        q.files[0]
    );
    assert_eq!(
        std::fs::read_to_string(h.ws.join("check.sh")).unwrap(),
        "#!/bin/sh\ntest -f done.txt\n",
        "nothing written before the answer"
    );
    s.shutdown().await.unwrap();

    // A link to it, and a shell command: the link asks; the command is named at the claim.
    let h = Harness::new(config(Verification::None));
    std::fs::write(h.ws.join("check.sh"), "#!/bin/sh\ntest -f done.txt\n").unwrap();
    std::os::unix::fs::symlink("check.sh", h.ws.join("alias.sh")).unwrap();
    let s = h.session(
        json!({"responses": [
            {"text": "via the link", "tool_calls": [
                {"name": "write", "arguments": {"path": "alias.sh", "content": "exit 0\n"}},
            ]},
        ]}),
        PermissionMode::Auto,
    );
    let ev = run(
        &s,
        user("/goal make the check pass check=\"sh ./check.sh\""),
    )
    .await;
    assert!(
        waymark_test_support::harness::permission_asked(&ev).is_some(),
        "a write through a link asks too"
    );
    s.shutdown().await.unwrap();

    let h = Harness::new(config(Verification::None));
    std::fs::write(h.ws.join("check.sh"), "#!/bin/sh\ntest -f done.txt\n").unwrap();
    let s = h.session(
        json!({"responses": [
            claim("done"),
            bash("printf '#!/bin/sh\\nexit 0\\n' > check.sh"),
            claim("the check passes"),
        ]}),
        PermissionMode::Auto,
    );
    let ev = run(
        &s,
        user("/goal make the check pass check=\"sh ./check.sh\""),
    )
    .await;
    let g = goal(&h, &s);
    assert_weakened(
        &g,
        &ev,
        &["the protected file `check.sh` was changed without your approval"],
    );
    s.shutdown().await.unwrap();
}

/// A check's output holding the provider key reaches no event, log or request: it is
/// redacted before it is cut, stored or sent.
#[tokio::test]
async fn g_49_a_provider_key_in_a_checks_output_is_redacted() {
    const KEY: &str = "sk-proj-CHECKLEAK-0123456789abcdefghij";
    let h = Harness::new(config(Verification::None));
    std::fs::write(h.ws.join("leak.txt"), format!("token={KEY}\n")).unwrap();
    let rt = h.reopen(|o| {
        o.env = std::sync::Arc::new(|k: &str| (k == "OPENAI_API_KEY").then(|| KEY.to_string()));
    });
    let s = rt
        .create_session(waymark_runtime::SessionSpec {
            workspace: Some(h.ws.clone()),
            model: Some(
                h.script(json!({"responses": [claim("done")], "when_exhausted": "repeat_last"})),
            ),
            permission_mode: Some(PermissionMode::Auto),
            hold: false,
        })
        .unwrap();
    let ev = run(&s, user("/goal ship it check=\"cat leak.txt; exit 1\"")).await;
    let runs = checks_of(&ev);
    assert!(!runs.is_empty());
    assert!(runs.iter().all(|r| r.3.contains("token=")), "{runs:?}");
    let logged = serde_json::to_string(&rt.events(s.id(), 0, 10_000).unwrap()).unwrap();
    assert!(!logged.contains(KEY), "the key is in the log");
    assert!(
        logged.contains("token="),
        "the check's output is in the log"
    );
    s.shutdown().await.unwrap();
}

/// The network is off in a check: a server on loopback counts no connection from it.
#[tokio::test]
async fn g_49_the_network_is_off_in_a_check() {
    let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let port = tcp.local_addr().unwrap().port();
    let h = Harness::new(config(Verification::None));
    let s = h.session(
        json!({"responses": [claim("done")], "when_exhausted": "repeat_last"}),
        PermissionMode::Auto,
    );
    let check = format!(
        "check=\"python3 -c 'import socket, sys; socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3)' 127.0.0.1 {port}\""
    );
    let ev = run(&s, user(&format!("/goal reach it {check}"))).await;
    let runs = checks_of(&ev);
    assert!(!runs.is_empty());
    for r in &runs {
        assert_ne!(r.0, Some(0), "{}", r.3);
        assert!(r.3.contains("Errno"), "refused by the sandbox: {}", r.3);
    }
    let mut accepted = 0;
    while tcp.accept().is_ok() {
        accepted += 1;
    }
    assert_eq!(accepted, 0, "the check reached the loopback server");
    s.shutdown().await.unwrap();
}

/// `goal.check_every_turns`: the checks run after every Nth goal turn for the gauge, besides
/// the baseline and the claim; off by default.
#[tokio::test]
async fn g_49_checks_run_every_n_turns_when_asked() {
    for (every, expected) in [(None, 2), (Some(1), 4)] {
        let mut c = config(Verification::None);
        c.goal.check_every_turns = every;
        let h = Harness::new(c);
        let s = h.session(
            json!({"responses": [{"text": "looking"}, {"text": "still looking"}, claim("done")]}),
            PermissionMode::Auto,
        );
        let ev = run(&s, user("/goal look around check=\"true\"")).await;
        let g = goal(&h, &s);
        assert_eq!(status(&g), (GoalStatus::Complete, GoalReason::ChecksPassed));
        let runs = checks_of(&ev);
        assert_eq!(runs.len(), expected, "every {every:?}: {runs:?}");
        s.shutdown().await.unwrap();
    }
}

fn read(path: &str) -> Value {
    json!({"text": "reading", "tool_calls": [{"name": "read_file", "arguments": {"path": path}}]})
}

/// A goal on `sh ./check.sh` in a fresh workspace whose model follows `responses`.
fn protected_case(responses: Vec<Value>) -> (Harness, SessionHandle) {
    let h = Harness::new(config(Verification::None));
    std::fs::write(h.ws.join("check.sh"), "#!/bin/sh\ntest -f done.txt\n").unwrap();
    let s = h.session(json!({ "responses": responses }), PermissionMode::Auto);
    (h, s)
}

const PROTECTED_GOAL: &str = "/goal make the check pass check=\"sh ./check.sh\"";

/// G-52, the ways around it: reading the file back does not approve a shell change; a
/// deleted check script written again still asks; an approved edit on top of a shell change
/// does not approve the shell change; an approved write alone is accepted at the claim.
#[tokio::test]
async fn g_52_a_protected_change_is_approved_only_by_the_users_answer_to_its_own_write() {
    // A shell change, then a read of the file: still named.
    let (h, s) = protected_case(vec![
        claim("done"),
        bash("printf '#!/bin/sh\\nexit 0\\n' > check.sh"),
        read("check.sh"),
        claim("the check passes"),
    ]);
    let ev = run(&s, user(PROTECTED_GOAL)).await;
    assert_weakened(
        &goal(&h, &s),
        &ev,
        &["the protected file `check.sh` was changed without your approval"],
    );
    s.shutdown().await.unwrap();

    // Deleted by the shell, then written again by the file tool: the write asks.
    let (_h, s) = protected_case(vec![
        bash("rm check.sh"),
        json!({"text": "again", "tool_calls": [{"name": "write", "arguments": {"path": "check.sh", "content": "exit 0\n"}}]}),
    ]);
    let ev = run(&s, user(PROTECTED_GOAL)).await;
    assert!(
        waymark_test_support::harness::permission_asked(&ev).is_some(),
        "the script the check names is protected though it was deleted"
    );
    s.shutdown().await.unwrap();

    // Changed by the shell, then an edit the user allows: the shell's change is still named.
    let (h, s) = protected_case(vec![
        bash("printf '#!/bin/sh\\nexit 0\\n# tidy\\n' > check.sh"),
        json!({"text": "tidying", "tool_calls": [{"name": "write", "arguments": {"path": "check.sh", "content": "#!/bin/sh\nexit 0\n"}}]}),
        claim("the check passes"),
    ]);
    let ev = run(&s, user(PROTECTED_GOAL)).await;
    let (q, _) = waymark_test_support::harness::permission_asked(&ev).expect("the edit asks");
    let ev = run(
        &s,
        Op::Answer {
            questionnaire_id: q,
            answer: waymark_protocol::Answer::AllowOnce,
        },
    )
    .await;
    assert_weakened(
        &goal(&h, &s),
        &ev,
        &["the protected file `check.sh` was changed without your approval"],
    );
    s.shutdown().await.unwrap();

    // The write alone, allowed by the user: accepted, and the goal completes on its check.
    let (h, s) = protected_case(vec![
        json!({"text": "loosening", "tool_calls": [{"name": "write", "arguments": {"path": "check.sh", "content": "#!/bin/sh\nexit 0\n"}}]}),
        claim("the check passes"),
    ]);
    let ev = run(&s, user(PROTECTED_GOAL)).await;
    let (q, _) = waymark_test_support::harness::permission_asked(&ev).expect("the write asks");
    run(
        &s,
        Op::Answer {
            questionnaire_id: q,
            answer: waymark_protocol::Answer::AllowOnce,
        },
    )
    .await;
    let g = goal(&h, &s);
    assert_eq!(
        status(&g),
        (GoalStatus::Complete, GoalReason::ChecksPassed),
        "{:?}",
        g.weakened
    );
    s.shutdown().await.unwrap();
}

/// A goal whose model starts `daemon` in the shell, then claims; the workspace holds
/// `tests/test_a.py` with `test`. The harness, the session and its events.
async fn with_daemon(
    test: &str,
    daemon: &str,
    goal: &str,
) -> (Harness, SessionHandle, Vec<waymark_protocol::Event>) {
    let h = Harness::new(config(Verification::None));
    std::fs::create_dir_all(h.ws.join("tests")).unwrap();
    std::fs::write(h.ws.join("tests/test_a.py"), test).unwrap();
    let s = h.session(
        json!({"responses": [bash(daemon), claim("done")]}),
        PermissionMode::Auto,
    );
    let ev = run(&s, user(goal)).await;
    (h, s, ev)
}

/// G-51: a process the agent leaves running that changes a test file while the checks run
/// (so they pass on one version and the verdict reads another) is named.
#[tokio::test]
async fn g_51_a_test_file_changed_while_the_checks_run_is_named() {
    // It waits for the check's own process (the pattern never matches its own command
    // line), then edits the file under it; it gives up after 30 s whatever happens.
    let daemon = "setsid timeout 30 sh -c 'while ! pgrep -f \"slee[p] 2.25\" >/dev/null; do sleep 0.05; done; echo \"# swapped\" >> tests/test_a.py' >/dev/null 2>&1 </dev/null &";
    let (h, s, ev) = with_daemon(
        "def test_a():\n    assert True\n",
        daemon,
        "/goal keep the tests check=\"sleep 2.25\"",
    )
    .await;
    assert_weakened(
        &goal(&h, &s),
        &ev,
        &["`tests/test_a.py` changed while the checks ran"],
    );
    s.shutdown().await.unwrap();
}

/// G-50, the reviewer: it builds and runs the project's tests in the goal's scratch layer,
/// and the workspace is byte for byte as it was.
#[tokio::test]
async fn g_50_the_reviewer_runs_cargo_test_and_the_workspace_is_unchanged() {
    let h = Harness::new(config(Verification::Subagent));
    rust_crate(&h.ws);
    std::fs::write(h.ws.join("src/lib.rs"), LIB_WRONG.replace("a - b", "a + b")).unwrap();
    let before = tree(&h.ws);
    let s = h.session(
        json!({
            "responses": [claim("done")],
            "verifier": [
                {"text": "Running the tests.", "tool_calls": [{"name": "bash", "arguments": {"command": "cargo test --offline 2>&1 | grep 'test result'"}}]},
                {"text": "They pass.\nVERDICT: PASS"}
            ]
        }),
        PermissionMode::Auto,
    );
    run(&s, user("/goal make add add")).await;
    let reviewed = waymark_test_support::harness::verifier_results(&h.runtime, s.id());
    assert!(
        reviewed
            .iter()
            .any(|r| r.contains("test result: ok. 2 passed")),
        "{reviewed:?}"
    );
    assert_eq!(status(&goal(&h, &s)).0, GoalStatus::Complete);
    assert_eq!(
        tree(&h.ws),
        before,
        "the workspace is byte for byte as it was"
    );
    s.shutdown().await.unwrap();
}

/// G-51, G-52 with links: a runner hook added by the shell as a link to an unprotected file
/// is named at the claim; a file-tool write through a link named like a protected file asks.
#[tokio::test]
async fn g_52_a_protected_name_that_is_a_link_is_still_protected() {
    let h = Harness::new(config(Verification::None));
    std::fs::create_dir_all(h.ws.join("tests")).unwrap();
    std::fs::write(
        h.ws.join("tests/test_a.py"),
        "def test_a():\n    assert True\n",
    )
    .unwrap();
    let s = h.session(
        json!({"responses": [
            bash("mkdir -p helpers && echo 'x = 1' > helpers/plug.py && ln -s ../helpers/plug.py tests/conftest.py"),
            claim("done"),
        ]}),
        PermissionMode::Auto,
    );
    let ev = run(&s, user("/goal keep it green check=true")).await;
    assert_weakened(
        &goal(&h, &s),
        &ev,
        &["the protected file `tests/conftest.py` was added without your approval"],
    );
    s.shutdown().await.unwrap();

    let h = Harness::new(config(Verification::None));
    std::fs::create_dir_all(h.ws.join("helpers")).unwrap();
    std::fs::write(h.ws.join("helpers/plug.py"), "x = 1\n").unwrap();
    std::os::unix::fs::symlink("helpers/plug.py", h.ws.join("conftest.py")).unwrap();
    let s = h.session(
        json!({"responses": [
            json!({"text": "hooking", "tool_calls": [{"name": "write", "arguments": {"path": "conftest.py", "content": "def pytest_runtest_makereport(): pass\n"}}]}),
        ]}),
        PermissionMode::Auto,
    );
    let ev = run(&s, user("/goal keep it green check=true")).await;
    assert!(
        waymark_test_support::harness::permission_asked(&ev).is_some(),
        "a write through a link named conftest.py asks"
    );
    s.shutdown().await.unwrap();
}

/// G-51: a process the agent left running that swaps a test file in while the checks run
/// and puts it back before they end (the same file before and after) is named: the runtime
/// watches the files it judges for the length of the run.
#[tokio::test]
async fn g_51_a_test_file_swapped_and_put_back_while_the_checks_run_is_named() {
    // While the check's own process lives, the file passes for a second; then the original
    // comes back, before the check ends.
    let daemon = "cp tests/test_a.py keep.txt; setsid timeout 30 sh -c 'while ! pgrep -f \"slee[p] 2.5\" >/dev/null; do sleep 0.05; done; printf \"def test_a():\\n    assert True\\n\" > tests/test_a.py; sleep 1; cat keep.txt > tests/test_a.py' >/dev/null 2>&1 </dev/null &";
    let (h, s, ev) = with_daemon(
        "def test_a():\n    assert False\n",
        daemon,
        "/goal make it pass check=\"sleep 2.5\"",
    )
    .await;
    let g = goal(&h, &s);
    // Wait for the daemon to put the file back, then judge.
    let started = std::time::Instant::now();
    while std::fs::read_to_string(h.ws.join("tests/test_a.py"))
        .unwrap()
        .contains("True")
    {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "the file never came back"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert_weakened(&g, &ev, &["`tests/test_a.py` changed while the checks ran"]);
    s.shutdown().await.unwrap();
}
