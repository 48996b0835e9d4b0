#!/usr/bin/env bash
# Installs what building and testing Waymark needs, only where it is missing (idempotent):
# a C compiler (SQLite is built from source), rustfmt/clippy, cargo-nextest; for the desktop
# app the WebKitGTK/GTK development packages, and for its end-to-end tests Xvfb, a D-Bus
# session bus with a notification daemon (dunst) and a Secret Service (gnome-keyring),
# WebKitWebDriver, tauri-driver, and xdotool (real X input for the native folder chooser);
# for the MCP tests, the reference MCP servers and the conformance suite (tests/mcp); for the
# ACP tests, the acpx client and the official TypeScript SDK (tests/acp), and OpenSSH (sshd and
# ssh) for the ACP test over SSH.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo

missing_apt=()
command -v cc >/dev/null 2>&1 || missing_apt+=(build-essential)
command -v pkg-config >/dev/null 2>&1 || missing_apt+=(pkg-config)
command -v python3 >/dev/null 2>&1 || missing_apt+=(python3)
command -v pgrep >/dev/null 2>&1 || missing_apt+=(procps)
desktop_apt=(file libwebkit2gtk-4.1-dev libgtk-3-dev libsoup-3.0-dev libssl-dev
  libayatana-appindicator3-dev librsvg2-dev libxdo-dev xvfb xauth webkit2gtk-driver
  fonts-dejavu-core imagemagick dbus dunst gnome-keyring xdotool)
# The ACP test over SSH starts a private sshd on 127.0.0.1 and connects with the ssh client.
test_apt=(openssh-server openssh-client)
for p in "${desktop_apt[@]}" "${test_apt[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing_apt+=("$p")
done
if [ ${#missing_apt[@]} -gt 0 ]; then
  echo "setup: installing ${missing_apt[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing_apt[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "setup: cargo is missing; install the Rust toolchain (https://rustup.rs) and run this again" >&2
  exit 1
fi
for comp in rustfmt clippy; do
  if ! cargo "${comp/rustfmt/fmt}" --version >/dev/null 2>&1; then
    echo "setup: installing the $comp component"
    rustup component add "$comp"
  fi
done
if ! cargo nextest --version >/dev/null 2>&1; then
  echo "setup: installing cargo-nextest"
  cargo install cargo-nextest --locked
fi

# The desktop front end: Vite 8 and Vitest 4 need Node.js 20.19 or newer.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "setup: Node.js 20.19+ and npm are missing; install them (https://nodejs.org) and run this again" >&2
  exit 1
fi
if ! node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=19)?0:1)'; then
  echo "setup: Node.js $(node --version) is too old; Waymark's front end needs 20.19 or newer" >&2
  exit 1
fi
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: installing the front end's npm packages"
  npm ci --no-audit --no-fund --loglevel=error
fi
# The MCP tests' real parts, pinned in tests/mcp/package-lock.json: the reference servers
# (everything, filesystem), the official conformance suite and the Node 22 it needs.
if [ ! -d tests/mcp/node_modules ] || [ tests/mcp/package-lock.json -nt tests/mcp/node_modules/.package-lock.json ]; then
  echo "setup: installing the MCP test servers and the conformance suite (tests/mcp)"
  npm ci --prefix tests/mcp --no-audit --no-fund --loglevel=error
fi
# The ACP tests' real clients, pinned in tests/acp/package-lock.json: acpx, the official
# TypeScript SDK (tests/acp/client.mjs is written on it), and the Node 22 they need.
if [ ! -d tests/acp/node_modules ] || [ tests/acp/package-lock.json -nt tests/acp/node_modules/.package-lock.json ]; then
  echo "setup: installing the ACP test client (tests/acp)"
  # Not `npm ci`: acpx's @openclaw/fs-safe 0.12.0 names optional per-platform packages that were
  # never published for every platform (darwin 0.12.0 is missing), so the lock cannot list them
  # and `npm ci` refuses the lock as out of sync. `npm install --no-save` installs the same locked
  # versions and leaves the lock untouched.
  npm install --prefix tests/acp --no-save --no-audit --no-fund --loglevel=error
fi
if ! command -v tauri-driver >/dev/null 2>&1 && [ ! -x "${CARGO_HOME:-$HOME/.cargo}/bin/tauri-driver" ]; then
  echo "setup: installing tauri-driver (WebDriver for the end-to-end tests)"
  cargo install tauri-driver --locked
fi
# The goal checks' real test runners (issue 39): pytest, pinned in tests/checks/requirements.txt,
# into a folder of this checkout that the tests put on PYTHONPATH (Debian's python3 has no pip:
# then python3-pip comes from apt first).
if [ ! -f tests/checks/site/.installed ] || [ tests/checks/requirements.txt -nt tests/checks/site/.installed ]; then
  if ! python3 -m pip --version >/dev/null 2>&1; then
    echo "setup: installing pip for python3"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-pip
  fi
  echo "setup: installing pytest for the goal-check tests (tests/checks)"
  rm -rf tests/checks/site
  python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
    --target tests/checks/site -r tests/checks/requirements.txt
  touch tests/checks/site/.installed
fi
