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
type Ran = (Option<i32>, Option<u64>, Option<u64>, String);

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
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(
        (runs[0].0, runs[0].1, runs[0].2),
        (Some(101), Some(1), Some(1)),
        "{}",
        runs[0].3
    );
    assert_eq!(
        (runs[1].0, runs[1].1, runs[1].2),
        (Some(0), Some(2), Some(0)),
        "{}",
        runs[1].3
    );
    let reqs = rec.requests.lock().unwrap().clone();
    assert!(
        reqs.iter().any(|r| r.messages.iter().any(|m| matches!(m,
            ModelMessage::User { text } if text.contains("these fail: `cargo test --offline`") && text.contains("two and two")))),
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
