#!/usr/bin/env bash
# One command: every check and test — format, lints, unit and integration tests (runtime,
# providers against a local mock server, CLI scenarios, crash recovery), the desktop app's
# front-end unit tests, and end-to-end tests that drive the real app window.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
echo "== front end: type check (svelte-check) and build (vite) -> ui/dist"
npm run build --silent
echo "== front end: unit tests (vitest)"
npm test --silent
echo "== cargo fmt --check"
cargo fmt --all --check
cargo fmt --manifest-path tests/e2e/Cargo.toml --check
echo "== the crates keep to their layers"
python3 scripts/check_layers.py --self-test
python3 scripts/check_layers.py --circles-self-test
python3 scripts/check_layers.py
echo "== cargo clippy --all-targets -- -D warnings"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== wire types build with the specta derives the desktop bindings use"
cargo check --locked -p waymark-protocol --features specta
echo "== cargo nextest run"
cargo nextest run --workspace --locked --profile ci
echo "== doc tests: what must not compile (a session tool registered as a plain tool)"
cargo test --doc --locked -p waymark-extension
echo "== generated TypeScript bindings are current"
if git rev-parse --git-dir >/dev/null 2>&1; then
  git diff --exit-code -- ui/src/bindings.ts || {
    echo "ui/src/bindings.ts is stale: commit the regenerated file" >&2
    exit 1
  }
fi
echo "== end-to-end: the real app window (tauri-driver, WebKitWebDriver, Xvfb, D-Bus)"
cargo build --locked -p waymark-desktop -p waymark-cli
target="${CARGO_TARGET_DIR:-target}"
cargo clippy --locked --manifest-path tests/e2e/Cargo.toml --target-dir "$target" --all-targets -- -D warnings
cargo test --locked --manifest-path tests/e2e/Cargo.toml --target-dir "$target" -- --test-threads=1
