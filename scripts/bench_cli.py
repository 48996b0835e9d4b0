"""Standing CLI target: against a local mock model server, the headless CLI's own CPU time per
agent turn (target <= 3 ms) and its peak RSS (target < 30 MB) over a 10-turn run in one
process. Also reported: one `waymark exec` process per turn (start-up included, each turn
making three model calls) and the start-up alone (opening an idle session, nothing to run).
Usage: bench_cli.py path/to/waymark"""

import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mock_openai  # noqa: E402

TURNS = 10


def run_turn(args, env, out_path, measure_rss):
    """Runs one process; returns (exit code, CPU seconds, peak RSS in KiB or None, wall s).
    With measure_rss the process runs under GNU time, which reports its true peak RSS (a
    child spawned straight from this Python process would count Python's pages as its own);
    without, CPU time comes from wait4 on the process itself, with no launcher included."""
    rss_path = out_path + ".rss"
    launcher = ["/usr/bin/time", "-f", "%M", "-o", rss_path] if measure_rss else []
    start = time.perf_counter()
    argv = launcher + args
    pid = os.posix_spawn(argv[0], argv, env, file_actions=[
        (os.POSIX_SPAWN_OPEN, 1, out_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ])
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    rss = None
    if measure_rss:
        with open(rss_path) as f:
            rss = int(f.read().split()[-1])
    return os.waitstatus_to_exitcode(status), usage.ru_utime + usage.ru_stime, rss, wall


def bench_setup(tmp, server, settings_text):
    """The benchmarks' workspace (a README to read) and settings file in `tmp`, and the
    environment that points the OpenAI provider at the mock `server`: (ws, settings, env)."""
    ws = os.path.join(tmp, "ws")
    os.makedirs(ws)
    with open(os.path.join(ws, "README.md"), "w") as f:
        f.write("# bench\n" + "Some text.\n" * 200)
    settings = os.path.join(tmp, "settings.json")
    with open(settings, "w") as f:
        f.write(settings_text)
    base = f"http://127.0.0.1:{server.server_address[1]}/v1"
    env = dict(os.environ, OPENAI_BASE_URL=base, OPENAI_API_KEY="bench-key")
    return ws, settings, env


def main():
    binary = os.path.abspath(sys.argv[1])
    server = mock_openai.start()
    with tempfile.TemporaryDirectory() as tmp:
        ws, settings, env = bench_setup(tmp, server, "{}")
        common = [binary, "--data-dir", os.path.join(tmp, "data"), "--config", settings,
                  "exec", "--permission", "auto", "--json"]
        out_path = os.path.join(tmp, "out.jsonl")
        cpu, rss, wall, session = [], [], [], None
        # Pass 1 measures peak RSS (under GNU time), pass 2 CPU time; each is a 10-turn run.
        for measure_rss in (True, False):
            for i in range(TURNS):
                where = ["--session", session] if session else ["--workspace", ws, "--model", "openai:bench-model"]
                code, c, r, w = run_turn(common + where + [f"check the project, round {i + 1}"], env, out_path, measure_rss)
                with open(out_path) as f:
                    lines = f.read().splitlines()
                if code != 0:
                    sys.exit(f"turn {i + 1} failed with exit {code}:\n" + "\n".join(lines[-20:]))
                events = [json.loads(line) for line in lines]
                calls = sum(1 for e in events if e["type"] == "assistant.message")
                if calls != 3:
                    sys.exit(f"turn {i + 1}: expected 3 model calls, saw {calls}")
                session = events[0]["session_id"]
                if measure_rss:
                    rss.append(r)
                else:
                    cpu.append(c)
                    wall.append(w)
        # Pass 3: one `waymark exec` driving a 10-turn goal (the goal's turn budget stops it;
        # then one summary call), the way a long run works.
        with open(settings, "w") as f:
            f.write('{"goal": {"verification": "none"}}')
        goal_args = common + ["--workspace", ws, "--model", "openai:bench-model", "/goal keep checking the project turns=10"]
        code, goal_cpu, _, goal_wall = run_turn(goal_args, env, out_path, False)
        with open(out_path) as f:
            lines = f.read().splitlines()
        # The turn budget stops the goal: exit 5 (README's exit-code table).
        if code not in (0, 5):
            sys.exit("goal run failed:\n" + "\n".join(lines[-20:]))
        # The events, one JSON object per line; the line saying why the run ended (stderr,
        # which shares the file) is not one.
        goal_turns = sum(1 for line in lines
                         if line.startswith("{") and json.loads(line)["type"] == "turn.finished")
        _, _, goal_rss, _ = run_turn(goal_args[:-1] + ["/goal keep checking again turns=10"], env, out_path, True)
        # Start-up alone: the same process on an idle session with nothing to do.
        startup = sorted(run_turn(common + ["--session", session], env, out_path, False)[1]
                         for _ in range(9))[4]
        server.shutdown()
    mean_ms = sum(cpu) / len(cpu) * 1000
    peak_mb = max(rss) / 1024
    print(f"cli: {TURNS} turns, 3 model calls each, one `waymark exec` process per turn, mock OpenAI server on loopback")
    print(f"cli: one process per turn, start-up included: mean {mean_ms:.2f} ms CPU, "
          f"max {max(cpu) * 1000:.2f} ms")
    print(f"cli: peak RSS {peak_mb:.1f} MB  (target < 30 MB)")
    print("cli: CPU ms per turn: " + " ".join(f"{c * 1000:.1f}" for c in cpu))
    print(f"cli: wall time per turn: mean {sum(wall) / len(wall) * 1000:.1f} ms")
    goal_ms = goal_cpu * 1000 / goal_turns
    own_ms = (goal_cpu - startup) * 1000 / goal_turns
    print(f"cli: start-up of one `waymark exec` (idle session, nothing to run): {startup * 1000:.2f} ms CPU")
    print(f"cli: 10-turn goal run in one process ({goal_turns} turns incl. the summary turn): "
          f"{goal_ms:.2f} ms CPU per turn with start-up, {own_ms:.2f} ms without; "
          f"peak RSS {goal_rss / 1024:.1f} MB, wall {goal_wall * 1000:.0f} ms")
    verdict = lambda ok: "met" if ok else "NOT met"
    print(f"cli: standing target: {verdict(own_ms <= 3 and goal_rss / 1024 < 30)} "
          "(<= 3 ms own CPU per agent turn, < 30 MB peak RSS over a 10-turn run)")


if __name__ == "__main__":
    main()
