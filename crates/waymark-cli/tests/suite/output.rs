//! Trust, round two (issue 19) in the terminal: every subcommand's output goes through one
//! escaper and one redaction step. A hostile model fills a plan, its revisions, comments, a
//! goal and its question with terminal escapes (clipboard writes, title changes, screen
//! clears) and invisible characters, and a shell planted the provider key in the plan file;
//! no subcommand prints either raw. The list of subcommands comes from the binary's own
//! help, so a new one without a case here fails the test.

use super::support::{Env, pending_questionnaire, text};
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::process::Output;

const KEY: &str = "sk-cli-round-two-0123456789abcdef";

/// OSC 52 (clipboard), a title change, a screen clear, an 8-bit CSI, line and paragraph
/// separators, a combining grapheme joiner, a Khmer invisible vowel, a bidi override and
/// blank-looking spaces.
const HOSTILE: &str = "\u{1b}]52;c;cHduZWQ=\u{7}\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}31m\u{2028}\u{2029}x\u{34f}y\u{17b4}z\u{202e}\u{2800}\u{3000}";

/// What must never reach the terminal raw.
const RAW: &[char] = &[
    '\u{1b}', '\u{7}', '\u{9b}', '\u{2028}', '\u{2029}', '\u{34f}', '\u{17b4}', '\u{17b5}',
    '\u{202e}', '\u{2800}', '\u{3000}', '\r',
];

fn plan(version: &str) -> String {
    format!(
        "## Summary\nPlan {version} {HOSTILE} louder.\n\n## Steps\n1. Step {HOSTILE}\n\n## Budget\nbudget=30K\n"
    )
}

fn submit(plan: &str) -> Value {
    json!({"text": format!("Plan written {HOSTILE}."), "tool_calls": [
        {"name": "write", "arguments": {"path": "${session_dir}/artifacts/plan.md", "content": plan}},
        {"name": "ExitPlanMode", "arguments": {}}
    ]})
}

/// The subcommand paths the binary lists in its help (`plan show`, `goal reply`, …).
fn subcommands(env: &Env) -> BTreeSet<String> {
    fn listed(out: &Output) -> Vec<String> {
        let help = String::from_utf8_lossy(&out.stdout);
        help.lines()
            .skip_while(|l| !l.starts_with("Commands:"))
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .filter_map(|l| l.split_whitespace().next().map(str::to_string))
            .filter(|c| c != "help")
            .collect()
    }
    let mut all = BTreeSet::new();
    for top in listed(&env.run(&["--help"])) {
        let nested = listed(&env.run(&[top.as_str(), "--help"]));
        if nested.is_empty() {
            all.insert(top);
        } else {
            all.extend(nested.into_iter().map(|n| format!("{top} {n}")));
        }
    }
    all
}

#[test]
fn every_subcommand_prints_escaped_and_redacted() {
    let env = Env::new();
    let run = |args: &[&str]| {
        env.cmd()
            .env("OPENAI_API_KEY", KEY)
            .args(args)
            .output()
            .unwrap()
    };
    std::fs::write(env.ws.join("greet.txt"), "hello\n").unwrap();
    let plan_model = env.script(
        "plan.json",
        json!({"responses": [submit(&plan("v1")), submit(&plan("v2"))]}),
    );
    // (subcommand path, its output)
    let mut outputs: Vec<(&str, Output)> = Vec::new();
    let out = run(&env.exec_args(
        &plan_model,
        &[
            "--permission",
            "auto-edit",
            "--plan",
            &format!("plan it {HOSTILE}"),
        ],
    ));
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    outputs.push(("exec", out));
    let sessions: Value = serde_json::from_slice(&run(&["sessions", "--json"]).stdout).unwrap();
    let sid = sessions[0]["id"].as_str().unwrap().to_string();
    // A file whose name carries the escapes (and whose content is the key), made between
    // two turns: the next turn's checkpoint lists it, and a rewind removes it.
    std::fs::write(env.ws.join(format!("evil{HOSTILE}.txt")), KEY).unwrap();
    let q = pending_questionnaire(&env, &sid);
    let out = run(&[
        "answer",
        "--session",
        &sid,
        &q,
        "revise",
        "--text",
        HOSTILE,
        "--comment",
        &format!("2:\"{HOSTILE}\""),
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    outputs.push(("answer", out));
    // A shell in plan mode appended the provider key (and more escapes) to the plan file.
    let plan_file = env
        .data
        .join("sessions")
        .join(&sid)
        .join("artifacts/plan.md");
    std::fs::write(
        &plan_file,
        format!("## Summary\nLeaked {KEY} here {HOSTILE}\n\n<p>{KEY}</p>\n"),
    )
    .unwrap();
    let plans: Value =
        serde_json::from_slice(&run(&["plan", "list", "--session", &sid, "--json"]).stdout)
            .unwrap();
    let plan_id = plans[0]["plan_id"].as_str().unwrap().to_string();

    // A goal whose objective and blocked question carry the escapes.
    let goal_model = env.script(
        "goal.json",
        json!({"responses": [{"text": format!("working {HOSTILE}"), "tool_calls": [
            {"name": "update_goal", "arguments": {"mode": "status", "status": "blocked",
                "message": format!("need you {HOSTILE}")}}
        ]}]}),
    );
    env.settings(r#"{"goal": {"verification": "none"}}"#);
    let ws = env.dir.path().join("ws2");
    std::fs::create_dir_all(&ws).unwrap();
    let out = run(&[
        "exec",
        "--workspace",
        ws.to_str().unwrap(),
        "--model",
        &goal_model,
        "--permission",
        "auto",
        &format!("/goal fix {HOSTILE} it"),
    ]);
    outputs.push(("exec", out));
    let sessions: Value = serde_json::from_slice(&run(&["sessions", "--json"]).stdout).unwrap();
    let gid = sessions
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .find(|id| *id != sid)
        .unwrap();
    let hostile_file = env.dir.path().join("edit.md");
    std::fs::write(
        &hostile_file,
        format!("## Summary\nMine {HOSTILE} {KEY}\n\n## Steps\n1. x\n"),
    )
    .unwrap();
    let checkpoints: Value =
        serde_json::from_slice(&run(&["checkpoints", "--session", &sid, "--json"]).stdout).unwrap();
    let first_cp = checkpoints[0]["id"].as_str().unwrap().to_string();
    let s = sid.as_str();
    let g = gid.as_str();
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("exec", vec!["exec", "--session", s]),
        ("sessions", vec!["sessions"]),
        ("sessions", vec!["sessions", "--json"]),
        ("show", vec!["show", "--session", s]),
        ("show", vec!["show", "--session", s, "--json"]),
        ("show", vec!["show", "--session", g]),
        ("events", vec!["events", "--session", s]),
        ("events", vec!["events", "--session", g]),
        ("plan show", vec!["plan", "show", "--session", s]),
        ("plan show", vec!["plan", "show", "--session", s, "--json"]),
        ("plan revisions", vec!["plan", "revisions", "--session", s]),
        ("plan diff", vec!["plan", "diff", "--session", s, "1", "2"]),
        (
            "plan diff",
            vec!["plan", "diff", "--session", s, "1", "2", "--json"],
        ),
        ("plan render", vec!["plan", "render", "--session", s]),
        ("plan list", vec!["plan", "list", "--session", s]),
        (
            "plan read",
            vec![
                "plan",
                "read",
                "--session",
                s,
                "--plan",
                &plan_id,
                "--version",
                "1",
            ],
        ),
        (
            "plan read",
            vec!["plan", "read", "--session", s, "--plan", HOSTILE],
        ),
        ("plan comments", vec!["plan", "comments", "--session", s]),
        (
            "plan comments",
            vec!["plan", "comments", "--session", s, "--json"],
        ),
        (
            "plan export",
            vec!["plan", "export", "--session", s, "--path", HOSTILE],
        ),
        (
            "plan edit",
            vec![
                "plan",
                "edit",
                "--session",
                s,
                "--file",
                hostile_file.to_str().unwrap(),
            ],
        ),
        ("plan show", vec!["plan", "show", "--session", s]),
        ("goal show", vec!["goal", "show", "--session", g]),
        ("goal show", vec!["goal", "show", "--session", g, "--json"]),
        ("goal events", vec!["goal", "events", "--session", g]),
        (
            "goal reply",
            vec![
                "goal",
                "reply",
                "--session",
                g,
                "--text",
                HOSTILE,
                "--no-run",
            ],
        ),
        (
            "goal queue",
            vec!["goal", "queue", "add", "--session", g, HOSTILE],
        ),
        ("goal draft", vec!["goal", "draft", "--session", g, HOSTILE]),
        ("answer", vec!["answer", "--session", s, HOSTILE, "approve"]),
        ("mcp add", vec!["mcp", "add", HOSTILE, "--", HOSTILE]),
        (
            "mcp add",
            vec!["mcp", "add", "h", "--env", HOSTILE, "--", HOSTILE],
        ),
        // An editor's agent: with no client on stdin it ends at once, printing nothing.
        ("acp", vec!["acp", "--model", HOSTILE]),
        ("mcp list", vec!["mcp", "list"]),
        ("mcp list", vec!["mcp", "list", "--json"]),
        ("mcp remove", vec!["mcp", "remove", HOSTILE]),
        (
            "worktree status",
            vec!["worktree", "status", "--session", s],
        ),
        (
            "worktree status",
            vec!["worktree", "status", "--session", HOSTILE],
        ),
        ("worktree diff", vec!["worktree", "diff", "--session", s]),
        (
            "worktree merge",
            vec!["worktree", "merge", "--session", HOSTILE],
        ),
        (
            "worktree discard",
            vec!["worktree", "discard", "--session", HOSTILE, "--yes"],
        ),
        ("checkpoints", vec!["checkpoints", "--session", s]),
        ("checkpoints", vec!["checkpoints", "--session", s, "--json"]),
        ("rewind", vec!["rewind", "--session", s, "--to", HOSTILE]),
        // Last: it removes the file with the hostile name, and says so.
        (
            "rewind",
            vec!["rewind", "--session", s, "--to", &first_cp, "--files"],
        ),
    ];
    for (what, args) in &cases {
        outputs.push((what, run(args)));
    }
    let listed = subcommands(&env);
    let covered: BTreeSet<String> = outputs.iter().map(|(w, _)| w.to_string()).collect();
    assert_eq!(
        listed, covered,
        "every subcommand needs a case here (listed by --help vs covered)"
    );
    let mut broke = Vec::new();
    for (what, out) in &outputs {
        for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            let shown = String::from_utf8_lossy(bytes);
            if let Some(c) = shown.chars().find(|c| RAW.contains(c)) {
                broke.push(format!("{what} {stream}: raw {:?} in {shown:?}", c));
            }
            if shown.contains(KEY) {
                broke.push(format!("{what} {stream}: the key in {shown:?}"));
            }
        }
    }
    assert!(broke.is_empty(), "{}", broke.join("\n"));
    // The escapes are shown, not dropped: the user sees what the model wrote.
    let shown = |what: &str| {
        outputs
            .iter()
            .filter(|(w, _)| *w == what)
            .map(|(_, o)| String::from_utf8_lossy(&o.stdout).into_owned())
            .collect::<String>()
    };
    assert!(
        shown("plan show").contains("\\x1b]52;c;"),
        "{}",
        shown("plan show")
    );
    assert!(shown("plan show").contains("[REDACTED:OPENAI_API_KEY]"));
    assert!(
        shown("goal show").contains("\\u{2028}"),
        "{}",
        shown("goal show")
    );
    assert!(
        shown("plan read").contains("\\u{17b4}"),
        "{}",
        shown("plan read")
    );
    // The file with the hostile name: listed as the next turn's change, removed by the
    // rewind, its name escaped both times.
    assert!(
        shown("checkpoints").contains("+evil\\x1b]52;c;"),
        "{}",
        shown("checkpoints")
    );
    assert!(
        shown("rewind").contains("removed   evil\\x1b]52;c;"),
        "{}",
        shown("rewind")
    );
    assert!(!env.ws.join(format!("evil{HOSTILE}.txt")).exists());
}

/// `plan edit --file` reads a regular file of at most the plan size limit, and says so
/// otherwise: a FIFO is not waited on, `/dev/zero` is not read forever, a 1 GiB file is not
/// loaded.
#[test]
fn plan_edit_takes_regular_files_within_the_size_limit_only() {
    let env = Env::new();
    std::fs::write(env.ws.join("greet.txt"), "hello\n").unwrap();
    let model = env.script(
        "plan.json",
        json!({"responses": [submit("## Summary\nA plan.\n")]}),
    );
    let out = env.exec(&model, &["--permission", "auto-edit", "--plan", "plan it"]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    let sid = env.only_session();
    let fifo = env.dir.path().join("pipe");
    super::support::mkfifo(&fifo);
    let huge = env.dir.path().join("huge.md");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    for (file, says) in [
        (fifo.to_str().unwrap(), "FIFO"),
        ("/dev/zero", "character device"),
        (huge.to_str().unwrap(), "larger than"),
    ] {
        let started = std::time::Instant::now();
        let mut child = env
            .cmd()
            .args(["plan", "edit", "--session", &sid, "--file", file])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // A hang is a failure, not a stuck test run.
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break Some(s);
            }
            if started.elapsed() > std::time::Duration::from_secs(20) {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        let out = child.wait_with_output().unwrap();
        let status = status.unwrap_or_else(|| panic!("plan edit --file {file} hung"));
        assert_eq!(status.code(), Some(1), "{file}: {}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(says), "{file}: {err}");
    }
    // The plan is what the model wrote.
    let shown = env.run(&["plan", "show", "--session", &sid]);
    assert_eq!(
        String::from_utf8_lossy(&shown.stdout),
        "## Summary\nA plan.\n"
    );
}

/// A usage error echoes the argument it did not understand: escaped, even when the
/// terminal takes colours (clap would otherwise pass the argument through raw).
#[test]
fn usage_errors_echo_arguments_escaped() {
    let env = Env::new();
    for args in [
        vec![HOSTILE],
        vec!["exec", "--permission", HOSTILE],
        vec!["plan", HOSTILE],
    ] {
        let out = env
            .cmd()
            .env("CLICOLOR_FORCE", "1")
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.chars().any(|c| RAW.contains(&c)),
            "{args:?}: raw in {err:?}"
        );
        assert!(err.contains("\\u{202e}"), "{args:?}: {err:?}");
    }
    let help = env
        .cmd()
        .env("CLICOLOR_FORCE", "1")
        .arg("--help")
        .output()
        .unwrap();
    assert_eq!(help.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&help.stdout).contains("Usage"));
}
