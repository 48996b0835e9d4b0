//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, client mode, run
//! with the Node 22 of tests/mcp) against the client entry point built from this crate's
//! connection code (`src/bin/waymark-mcp-conformance.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;

fn mcp(rel: &str) -> PathBuf {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/mcp")
        .join(rel);
    assert!(
        p.exists(),
        "{} missing: scripts/setup.sh installs the conformance suite",
        p.display()
    );
    p
}

fn scenario(name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(mcp("node_modules/.bin/node"))
        .arg(mcp(
            "node_modules/@modelcontextprotocol/conformance/dist/index.js",
        ))
        .args(["client", "--scenario", name, "--command"])
        .arg(env!("CARGO_BIN_EXE_waymark-mcp-conformance"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{name}: {text}");
    assert!(text.contains("OVERALL: PASSED"), "{name}: {text}");
    assert!(text.contains(" 0 failed"), "{name}: {text}");
}

#[test]
fn conformance_initialize() {
    scenario("initialize");
}

#[test]
fn conformance_tools_call() {
    scenario("tools_call");
}

#[test]
fn conformance_elicitation_defaults() {
    scenario("elicitation-sep1034-client-defaults");
}

#[test]
fn conformance_sse_retry() {
    scenario("sse-retry");
}
