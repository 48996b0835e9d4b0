#!/usr/bin/env bash
# Benchmarks: the runtime (criterion), the standing CLI target against a local mock model
# server, the turn loop's instructions (Callgrind), and the set-up cost of one sandboxed
# command (read set, helper, Landlock, capabilities, seccomp). Prints the figures; asserts
# nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [ "${1:-}" = "--desktop" ]; then
  # The release app in a real window: cold start, idle memory, plan repaint, long transcript.
  npm run build --silent
  # The app as users run it (the size-built `desktop` profile), and the CLI the tests drive.
  cargo build --locked --profile desktop -p waymark-desktop
  cargo build --locked --release -p waymark-cli
  target="${CARGO_TARGET_DIR:-$PWD/target}"
  # The floor: a blank Tauri 2 window (the reference skeleton), built in release from a
  # copy (its build writes generated files next to its sources). BLANK_TAURI_SRC overrides.
  blank_src="${BLANK_TAURI_SRC:-$PWD/../shared/reference/tauri-skeleton}"
  blank_app=""
  if [ -d "$blank_src" ]; then
    rm -rf "$target/blank-tauri" && mkdir -p "$target/blank-tauri"
    tar -C "$blank_src" --exclude=node_modules --exclude=target -cf - . | tar -C "$target/blank-tauri" -xf -
    # Its src-tauri/tauri.conf.json is a link to the top-level one (it may arrive as a
    # plain file holding the link's target).
    ln -sfn ../tauri.conf.json "$target/blank-tauri/src-tauri/tauri.conf.json"
    # Its window opens at the app's size: a larger window holds larger pictures of itself in
    # both processes (about 3 MB from 800x600 to 1280x800), which is not the app's own cost.
    python3 - "$target/blank-tauri/tauri.conf.json" src-tauri/tauri.conf.json <<'PY'
import json, sys
blank, ours = sys.argv[1], json.load(open(sys.argv[2]))["app"]["windows"][0]
conf = json.load(open(blank))
for w in conf["app"]["windows"]:
    w["width"], w["height"] = ours["width"], ours["height"]
json.dump(conf, open(blank, "w"), indent=2)
PY
    # Its page builds with this repository's node_modules (found by walking up).
    (cd "$target/blank-tauri" && npx --no-install vite build --config vite.config.ts >/dev/null)
    cargo build --release --manifest-path "$target/blank-tauri/Cargo.toml" --target-dir "$target"
    blank_app="$target/release/probe-app"
  else
    echo "no blank Tauri app at $blank_src: the idle-memory ratio is skipped" >&2
  fi
  BLANK_TAURI_APP="$blank_app" E2E_APP="$target/desktop/waymark-desktop" WAYMARK_CLI="$target/release/waymark" \
    cargo bench --locked --manifest-path tests/e2e/Cargo.toml --target-dir "$target" --bench desktop
  exit 0
fi
cargo build --locked --release -p waymark-cli
python3 scripts/bench_cli.py target/release/waymark
python3 scripts/bench_acp.py target/release/waymark
python3 scripts/bench_hooks.py target/release/waymark
# Callgrind counts instructions, so the turn loop is compared across commits whatever the load.
if ! command -v valgrind >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends valgrind
fi
python3 scripts/bench_callgrind.py target/release/waymark
cargo bench --locked -p waymark-runtime --bench sandbox
# The scratch layer on 10,000 files / 200 MB: a check's own set-up and tear-down, and a
# second `cargo test` in the layer against one in a copy of the tree.
cargo bench --locked -p waymark-runtime --bench scratch
# The runtime's own time per MCP call against the real server-everything, and the first model
# call of a session with five servers configured against none.
cargo bench --locked -p waymark-runtime --bench mcp
# Checkpoint cost on 10,000 files / 200 MB against `git status --porcelain` on the same tree.
cargo bench --locked -p waymark-checkpoint --bench checkpoint
cargo bench --locked -p waymark-runtime --bench runtime --bench plan_render --bench goal -- --noplot 2>&1 | grep -E "^[a-z_/0-9]+|time:"
python3 - <<'PY'
import glob, json
for f in sorted(glob.glob("target/criterion/*/new/estimates.json")):
    e = json.load(open(f))
    print(f"{f.split('/')[2]}: median {e['median']['point_estimate'] / 1e3:.1f} µs")
PY
