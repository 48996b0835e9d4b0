#!/usr/bin/env bash
# Installs what building and testing Waymark needs, only where it is missing (idempotent):
# a C compiler (SQLite is built from source), rustfmt/clippy, cargo-nextest.
set -euo pipefail
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo

missing_apt=()
command -v cc >/dev/null 2>&1 || missing_apt+=(build-essential)
command -v pkg-config >/dev/null 2>&1 || missing_apt+=(pkg-config)
command -v python3 >/dev/null 2>&1 || missing_apt+=(python3)
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
