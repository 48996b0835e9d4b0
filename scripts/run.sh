#!/usr/bin/env bash
# One command: install what is missing, build, and open the Waymark desktop app (under Xvfb
# when there is no display). With no model configured it starts an offline demo.
# `scripts/run.sh --cli` runs the headless CLI demo instead (extra arguments go to `exec`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [ "${1:-}" = "--cli" ]; then
  shift
  exec scripts/demo_cli.sh "$@"
fi
npm run build --silent
# The optimised build, for size (the `desktop` profile): the first impression should be the
# fast, light app (tests keep debug builds).
cargo build --locked --profile desktop -p waymark-desktop
app="${CARGO_TARGET_DIR:-$PWD/target}/desktop/waymark-desktop"
if [ -n "${DISPLAY:-}" ]; then exec "$app"; fi
echo "No display: running under Xvfb (screen 1440x900)."
exec xvfb-run -a -s "-screen 0 1440x900x24" dbus-run-session -- "$app"
