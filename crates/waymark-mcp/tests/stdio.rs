//! Against the real reference server (`@modelcontextprotocol/server-everything`, installed by
//! `scripts/setup.sh` into tests/mcp), and against servers that misbehave.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};
use waymark_config::mcp::McpTransport;
use waymark_mcp::list_tools;

fn everything() -> PathBuf {
    let bin = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/mcp/node_modules/.bin/mcp-server-everything");
    assert!(
        bin.exists(),
        "{} missing: scripts/setup.sh installs the MCP test servers",
        bin.display()
    );
    bin
}

fn stdio(command: &str, args: &[&str]) -> McpTransport {
    McpTransport::Stdio {
        command: command.into(),
        args: args.iter().map(|a| a.to_string()).collect(),
        env: BTreeMap::new(),
        cwd: None,
    }
}

#[tokio::test]
async fn the_reference_server_answers_initialize_and_lists_its_tools() {
    let bin = everything();
    let tools = list_tools(
        "everything",
        &stdio(bin.to_str().unwrap(), &["stdio"]),
        Duration::from_secs(30),
    )
    .await
    .unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for want in ["echo", "get-sum"] {
        assert!(names.contains(&want), "{names:?}");
    }
    assert!(tools.iter().all(|t| !t.description.is_empty()), "{tools:?}");
}

/// The error of server `name`, which must come well before 10 s with `startup` of a few.
async fn fails_soon(
    name: &str,
    transport: McpTransport,
    startup: Duration,
) -> waymark_mcp::McpError {
    let started = Instant::now();
    let e = list_tools(name, &transport, startup).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(e.server, name, "{e}");
    e
}

#[tokio::test]
async fn a_server_that_never_answers_fails_within_its_start_up_time() {
    let e = fails_soon("silent", stdio("sleep", &["60"]), Duration::from_secs(1)).await;
    assert!(
        e.to_string()
            .contains("no answer to `initialize` within 1 s"),
        "{e}"
    );
}

#[tokio::test]
async fn a_program_that_is_not_there_says_so() {
    let e = list_tools(
        "ghost",
        &stdio("/nonexistent/mcp-server", &[]),
        Duration::from_secs(5),
    )
    .await
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("cannot start `/nonexistent/mcp-server`"),
        "{e}"
    );
}

/// Whether a process whose command line holds `marker` is alive.
fn running(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|p| {
        std::fs::read(p.path().join("cmdline"))
            .map(|c| {
                String::from_utf8_lossy(&c)
                    .replace('\0', " ")
                    .contains(marker)
            })
            .unwrap_or(false)
    })
}

#[tokio::test]
async fn a_server_that_prints_garbage_is_an_error_and_leaves_no_process_behind() {
    // The shell's own child (the sleep) must go too: the whole process group is killed.
    fails_soon(
        "noise",
        stdio(
            "sh",
            &["-c", "yes 'not json' | head -c 100000; sleep 61.25"],
        ),
        Duration::from_secs(2),
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while running("sleep 61.25") {
        assert!(Instant::now() < deadline, "the server's child outlived it");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
