pub(crate) use waymark_test_support::{harness, mock_server};

mod changes;
mod client;
mod compaction;
mod configure;
mod effects;
mod extension;
mod goal;
mod hooks;
mod instructions;
mod long_goal;
mod mcp;
mod plan;
mod policy;
mod protocol;
mod providers;
mod red_team;
mod runtime;
mod scratch;
mod sessions;
mod setup;
mod steps;
mod subagent;
mod task;
mod upgrade;
mod web;
mod worktree;

/// The harness runs sessions with the real sandbox helper of this package.
#[test]
fn the_harness_finds_the_sandbox_helper() {
    let found = harness::sandbox_helper().expect("the sandbox helper beside the test binary");
    assert_eq!(
        found.canonicalize().unwrap(),
        std::path::Path::new(env!("CARGO_BIN_EXE_waymark-sandbox"))
            .canonicalize()
            .unwrap()
    );
}
