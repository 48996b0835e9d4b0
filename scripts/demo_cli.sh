#!/usr/bin/env bash
# The headless CLI demo (scripts/run.sh --cli): a session against the offline scripted model
# (no API key needed). Extra arguments are passed to `waymark exec`.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --locked -p waymark-cli
bin="$PWD/target/debug/waymark"
demo="$(mktemp -d "${TMPDIR:-/tmp}/waymark-demo.XXXXXX")"
cp -r demo/workspace "$demo/workspace"
echo "Demo workspace: $demo/workspace (a copy of demo/workspace)"
echo
set +e
"$bin" --data-dir "$demo/data" exec --workspace "$demo/workspace" \
  --model "scripted:$PWD/demo/script.json" --permission auto "$@" \
  "Add a test for the greeting script and make the greeting end with an exclamation mark."
status=$?
set -e
echo
echo "--- the session as stored:"
session=$("$bin" --data-dir "$demo/data" sessions | head -n1 | cut -d' ' -f1)
"$bin" --data-dir "$demo/data" show --session "$session"
echo
echo "--- what changed in the workspace:"
diff -ruN demo/workspace "$demo/workspace" || true
cat <<MSG

That was the offline scripted model. To use a real one:
  export OPENAI_API_KEY=...    && $bin exec --model openai:gpt-4.1 "your task"
  export ANTHROPIC_API_KEY=... && $bin exec --model anthropic:claude-sonnet-4-5 "your task"
  $bin exec --model ollama:qwen3 "your task"          # a local Ollama server
See README.md for OpenAI-compatible endpoints and the settings file.
MSG
exit $status
