#!/usr/bin/env bash
# One command: every check and test — format, lints, unit and integration tests (runtime,
# providers against a local mock server, CLI scenarios, crash recovery).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
echo "== cargo fmt --check"
cargo fmt --all --check
echo "== cargo clippy --all-targets -- -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== wire types build with the specta derives the desktop bindings use"
cargo check --locked -p waymark-protocol --features specta
echo "== cargo nextest run"
cargo nextest run --workspace --locked --profile ci
