"""Issue 42's benchmarks, with the scripted model (no network, no model time):
- what a `PreToolUse` hook of `true` adds per tool call (target <= 3 ms): the same 40-call
  run with and without the hook;
- what a subagent costs (target <= 5 ms of its own): 20 `task` calls whose children answer
  at once, against a run of no tool calls; each task's figure holds the parent's model call
  that made it and the child's own (scripted, so no model time), and is an upper bound.
Each run is one `waymark exec` process; the figure is from the median of alternating runs.
Usage: bench_hooks.py path/to/waymark"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CALLS = 40
TASKS = 20
RUNS = 9


def run(binary, tmp, ws, settings_text, responses):
    settings = os.path.join(tmp, "settings.json")
    with open(settings, "w") as f:
        f.write(settings_text)
    script = os.path.join(tmp, "script.json")
    with open(script, "w") as f:
        json.dump({"responses": responses}, f)
    args = [binary, "--data-dir", os.path.join(tmp, "data"), "--config", settings, "exec",
            "--permission", "auto", "--json", "--workspace", ws, "--model", f"scripted:{script}",
            "go"]
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"run failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return wall, done.stdout


def per_call(binary, tmp, ws, a, b, count):
    """Median over alternating runs of (wall of b - wall of a) / count, in ms."""
    diffs = []
    for _ in range(RUNS):
        wa, _ = run(binary, tmp, ws, *a)
        wb, out = run(binary, tmp, ws, *b)
        diffs.append((wb - wa) * 1000 / count)
    return statistics.median(diffs), out


def main():
    binary = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        ws = os.path.join(tmp, "ws")
        os.makedirs(ws)
        with open(os.path.join(ws, "README.md"), "w") as f:
            f.write("# bench\n")
        read = {"tool_calls": [{"name": "read_file", "arguments": {"path": "README.md"}}]}
        calls = [read] * CALLS + [{"text": "done"}]
        plain = json.dumps({"hooks": {"import_claude": False}})
        hooked = json.dumps({"hooks": {"import_claude": False, "PreToolUse": [
            {"matcher": "*", "hooks": [{"type": "command", "command": "true"}]}]}})
        hook_ms, out = per_call(binary, tmp, ws, (plain, calls), (hooked, calls), CALLS)
        ran = sum(1 for line in out.splitlines()
                  if line.startswith("{") and json.loads(line)["type"] == "hook.ran")
        if ran != CALLS:
            sys.exit(f"expected {CALLS} hook runs, saw {ran}")
        print(f"hooks: a PreToolUse hook of `true` adds {hook_ms:.2f} ms per tool call "
              f"(median of {RUNS} alternating runs of {CALLS} calls; target <= 3 ms): "
              f"{'met' if hook_ms <= 3 else 'NOT met'}")

        task = {"tool_calls": [{"name": "task", "arguments": {
            "description": "look", "prompt": "Say hello.", "agent": "explore"}}]}
        tasks = []
        for _ in range(TASKS):
            tasks += [task, {"text": "hello"}]
        tasks.append({"text": "done"})
        same = [{"text": "done"}]
        task_ms, out = per_call(binary, tmp, ws, (plain, same), (plain, tasks), TASKS)
        done = sum(1 for line in out.splitlines() if line.startswith("{")
                   and json.loads(line).get("type") == "tool.result"
                   and json.loads(line).get("name") == "task"
                   and json.loads(line).get("status") == "ok")
        if done != TASKS:
            sys.exit(f"expected {TASKS} finished tasks, saw {done}")
        print(f"subagents: one `task` costs {task_ms:.2f} ms in all, the parent's model call "
              f"that made it and the child's included (median of {RUNS} alternating runs of {TASKS}; "
              f"target <= 5 ms): {'met' if task_ms <= 5 else 'NOT met'}")


if __name__ == "__main__":
    main()
