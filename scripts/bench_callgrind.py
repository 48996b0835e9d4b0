"""The turn loop's cost in instructions (Callgrind), which unlike time does not depend on the
machine's load: one `waymark exec` drives a goal of N turns against the local mock OpenAI
server, for N = 10 and N = 20; the difference over the extra turns is the instructions one
turn costs (start-up, opening the store and the summary call cancel out).
Usage: bench_callgrind.py path/to/waymark"""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mock_openai  # noqa: E402


def goal_run(binary, env, tmp, turns):
    """Instructions of one goal run of `turns` turns, and the turns it finished."""
    data = os.path.join(tmp, f"data-{turns}")
    out = os.path.join(tmp, f"callgrind-{turns}.out")
    argv = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
            binary, "--data-dir", data, "--config", os.path.join(tmp, "settings.json"),
            "exec", "--permission", "auto", "--json", "--workspace", os.path.join(tmp, "ws"),
            "--model", "openai:bench-model", f"/goal keep checking the project turns={turns}"]
    p = subprocess.run(argv, env=env, capture_output=True, text=True)
    # The goal ends with its turn budget spent: exit 5 (the exit-code table in README.md).
    if p.returncode not in (0, 5):
        sys.exit(f"goal run of {turns} turns failed ({p.returncode}):\n{p.stderr[-2000:]}")
    finished = sum(1 for line in p.stdout.splitlines() if json.loads(line)["type"] == "turn.finished")
    with open(out) as f:
        totals = [line for line in f if line.startswith(("summary:", "totals:"))]
    return int(re.findall(r"\d+", totals[-1])[0]), finished


def main():
    if shutil.which("valgrind") is None:
        print("callgrind: valgrind is not installed; skipped")
        return
    binary = os.path.abspath(sys.argv[1])
    server = mock_openai.start()
    env = dict(os.environ, OPENAI_BASE_URL=f"http://127.0.0.1:{server.server_address[1]}/v1",
               OPENAI_API_KEY="bench-key")
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "ws"))
        with open(os.path.join(tmp, "ws", "README.md"), "w") as f:
            f.write("# bench\n" + "Some text.\n" * 200)
        with open(os.path.join(tmp, "settings.json"), "w") as f:
            f.write('{"goal": {"verification": "none"}}')
        short, short_turns = goal_run(binary, env, tmp, 10)
        long, long_turns = goal_run(binary, env, tmp, 20)
    server.shutdown()
    per_turn = (long - short) / (long_turns - short_turns)
    print(f"callgrind: goal of {short_turns} turns {short / 1e6:.1f} M instructions, "
          f"{long_turns} turns {long / 1e6:.1f} M")
    print(f"callgrind: turn loop {per_turn / 1e6:.2f} M instructions per turn")


if __name__ == "__main__":
    main()
