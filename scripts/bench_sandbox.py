"""Sandbox set-up cost: what confining one shell command adds (target <= 5 ms).
Runs the same command directly and through the sandbox helper (`waymark __waymark-sandbox`,
exactly as the runtime starts a plan-mode or verifier command: new session, no terminal,
RLIMIT_FSIZE, Landlock, seccomp, then exec), interleaved, and reports the difference of the
medians, in wall time and in CPU time. Also reports the once-per-session layer probe.
Usage: bench_sandbox.py path/to/waymark"""

import os
import statistics
import sys
import tempfile
import time

RUNS = 300


def spawn(argv):
    """Wall seconds and CPU seconds (user+sys) of one process, started in a new session."""
    start = time.perf_counter()
    pid = os.posix_spawn(argv[0], argv, {"PATH": "/usr/bin:/bin"}, setsid=True, file_actions=[
        (os.POSIX_SPAWN_OPEN, 0, "/dev/null", os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0),
    ])
    _, status, usage = os.wait4(pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{argv} failed with exit {os.waitstatus_to_exitcode(status)}")
    return wall, usage.ru_utime + usage.ru_stime


def main():
    binary = os.path.abspath(sys.argv[1])
    with tempfile.TemporaryDirectory() as tmp:
        helper = [binary, "__waymark-sandbox", "--rw", tmp, "--net", "deny", "--"]
        cases = {
            "/bin/true": ["/bin/true"],
            "bash -c 'ls >/dev/null'": ["/bin/bash", "-c", "ls >/dev/null"],
        }
        for name, cmd in cases.items():
            direct, boxed = [], []
            for _ in range(RUNS):
                direct.append(spawn(cmd))
                boxed.append(spawn(helper + cmd))
            med = lambda xs, i: statistics.median(x[i] for x in xs) * 1000
            wall = med(boxed, 0) - med(direct, 0)
            cpu = med(boxed, 1) - med(direct, 1)
            print(f"sandbox: {name}: direct {med(direct, 0):.2f} ms, sandboxed {med(boxed, 0):.2f} ms "
                  f"(medians of {RUNS})")
            print(f"sandbox: set-up per command ({name}): {wall:.2f} ms wall, {cpu:.2f} ms CPU  "
                  f"({'met' if wall <= 5 else 'NOT met'}: target <= 5 ms)")
        outside = os.path.join(tmp, "..")
        probes = [spawn([binary, "__waymark-sandbox", "--rw", tmp, "--net", "deny", "--probe", outside])
                  for _ in range(20)]
        print(f"sandbox: layer probe, once per session: {statistics.median(p[0] for p in probes) * 1000:.2f} ms")


if __name__ == "__main__":
    main()
