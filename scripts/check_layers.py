"""The crate layering, checked from `cargo metadata` (manifests only, no network): each crate's
normal dependencies on other Waymark crates must be among those its layer allows. Crates of
the plan that do not exist yet are skipped; a Waymark crate the table does not know fails.
Usage: check_layers.py            check this workspace
       check_layers.py --self-test   show that a back edge is caught"""

import json
import os
import subprocess
import sys
import tempfile

import file_circles

# What each crate may depend on (normal dependencies, Waymark crates only).
LOW = {"waymark-protocol", "waymark-config", "waymark-store", "waymark-tools", "waymark-sandbox", "waymark-provider"}
ALLOWED = {
    # Wire types only.
    "waymark-protocol": set(),
    # The settings and what is read from them (prices, secrets, MCP servers, model set-up).
    "waymark-config": {"waymark-protocol"},
    "waymark-sandbox": {"waymark-protocol", "waymark-config"},
    "waymark-provider": {"waymark-protocol", "waymark-config"},
    "waymark-store": {"waymark-protocol", "waymark-config"},
    "waymark-tools": {"waymark-protocol", "waymark-config", "waymark-sandbox"},
    # The extension API hands out the session's model (the goal's reviewer calls it), so it
    # sits above the provider too.
    "waymark-extension": LOW,
    "waymark-engine": LOW | {"waymark-extension"},
    # Feature crates: the extension API and below, never the engine, the runtime or each other.
    "waymark-plan": LOW | {"waymark-extension"},
    "waymark-goal": LOW | {"waymark-extension"},
    "waymark-mcp": LOW | {"waymark-extension"},
    "waymark-checkpoint": LOW | {"waymark-extension"},
    "waymark-worktree": LOW | {"waymark-extension"},
    "waymark-web": LOW | {"waymark-extension"},
    "waymark-hooks": LOW | {"waymark-extension"},
    "waymark-agents": LOW | {"waymark-extension"},
    # Test helpers are a dev-dependency only (see DEV_ONLY): the fixtures below the runtime
    # (for the feature crates' own tests), and the runtime harness.
    "waymark-fixtures": {"waymark-protocol", "waymark-config", "waymark-store", "waymark-extension"},
    "waymark-test-support": LOW | {"waymark-fixtures", "waymark-extension", "waymark-engine",
                                   "waymark-runtime", "waymark-plan", "waymark-goal",
                                   "waymark-mcp", "waymark-checkpoint", "waymark-worktree",
                                   "waymark-web", "waymark-hooks", "waymark-agents"},
    "waymark-runtime": LOW | {"waymark-extension", "waymark-engine", "waymark-plan", "waymark-goal",
                              "waymark-mcp", "waymark-checkpoint", "waymark-worktree",
                              "waymark-web", "waymark-hooks", "waymark-agents"},
    # Thin front ends.
    "waymark-cli": {"waymark-protocol", "waymark-config", "waymark-runtime", "waymark-acp"},
    # The Agent Client Protocol front end, which the CLI serves as `waymark acp`.
    "waymark-acp": {"waymark-protocol", "waymark-config", "waymark-runtime"},
    "waymark-desktop": {"waymark-protocol", "waymark-config", "waymark-runtime"},
}

# Import circles between the files of one crate that stand today, each as its files. The list
# is empty: every circle fails the check. Should one ever have to be listed, the check also
# fails when it grows or when it is gone (then the list is brought down to the truth).
KNOWN_CIRCLES: list[list[str]] = []

# Crates no shipped crate may depend on except as a dev-dependency.
DEV_ONLY = {"waymark-fixtures", "waymark-test-support"}


def violations(packages):
    """Every edge that breaks the table, as text."""
    out = []
    for p in packages:
        name = p["name"]
        if not name.startswith("waymark-"):
            continue
        deps = {d["name"] for d in p["dependencies"]
                if d["name"].startswith("waymark-") and d.get("kind") in (None, "normal")}
        if name not in ALLOWED:
            out.append(f"{name}: not in the layer table of scripts/check_layers.py")
            continue
        for d in sorted(deps - ALLOWED[name]):
            out.append(f"{name} depends on {d}, which its layer does not allow")
        # A test helper may build on another; a shipped crate takes none but for its tests.
        shipped = name not in DEV_ONLY
        for d in sorted(deps & DEV_ONLY if shipped else set()):
            out.append(f"{name} depends on {d} outside its tests (a dev-dependency only)")
    return out


def main():
    if sys.argv[1:] == ["--self-test"]:
        bad = [{"name": "waymark-store", "dependencies": [
            {"name": "waymark-protocol", "kind": None},
            {"name": "waymark-tools", "kind": None},
            {"name": "waymark-runtime", "kind": "dev"}]}]
        found = violations(bad)
        assert found == ["waymark-store depends on waymark-tools, which its layer does not allow"], found
        assert violations([{"name": "waymark-new", "dependencies": []}])
        feature = [{"name": "waymark-plan", "dependencies": [
            {"name": "waymark-extension", "kind": None},
            {"name": "waymark-goal", "kind": None},
            {"name": "waymark-test-support", "kind": "dev"}]}]
        assert violations(feature) == [
            "waymark-plan depends on waymark-goal, which its layer does not allow"], violations(feature)
        shipped = [{"name": "waymark-goal", "dependencies": [
            {"name": "waymark-test-support", "kind": None}]}]
        assert len(violations(shipped)) == 2, violations(shipped)
        print("layers: the self-test catches a back edge, a feature naming another, test helpers shipped and an unknown crate")
        return
    if sys.argv[1:] == ["--circles-self-test"]:
        circles_self_test()
        return
    meta = json.loads(subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps", "--offline"],
        check=True, capture_output=True, text=True).stdout)
    found = violations(meta["packages"])
    if found:
        sys.exit("layers broken:\n  " + "\n  ".join(found))
    names = sorted(p["name"] for p in meta["packages"] if p["name"].startswith("waymark-"))
    print(f"layers: {len(names)} crates keep to their layers ({', '.join(names)})")
    check_circles(meta["packages"])


def crate_roots(packages):
    """The source root of every library and binary of our crates."""
    for p in packages:
        if not p["name"].startswith("waymark-"):
            continue
        for t in p["targets"]:
            if set(t["kind"]) & {"lib", "bin"}:
                yield t["src_path"]


def check_circles(packages):
    """Fails on a circle between one crate's files that is not listed, or a listed one gone."""
    here = os.getcwd()
    found = {}
    for root in crate_roots(packages):
        for files, ties in file_circles.crate_circles(root, here):
            found[frozenset(files)] = ties
    known = [frozenset(c) for c in KNOWN_CIRCLES]
    problems = []
    for files, ties in sorted(found.items(), key=lambda kv: sorted(kv[0])):
        if not any(files <= k for k in known):
            problems.append("a new import circle between " + ", ".join(sorted(files)) + ":\n      "
                            + "\n      ".join(ties))
    for k in known:
        if k not in found:
            problems.append("a listed circle is gone or smaller; list what stands now in "
                            "KNOWN_CIRCLES: " + ", ".join(sorted(k)))
    if problems:
        sys.exit("file circles:\n  " + "\n  ".join(problems))
    files = sum(len(k) for k in found)
    print(f"layers: {len(found)} known import circles between a crate's files ({files} files), none new")


def circles_self_test():
    """A loop of two files is found; a re-export, a test module and a comment tie nothing."""
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "src")
        os.makedirs(src)
        files = {
            "lib.rs": "mod a;\nmod b;\nmod c;\npub use a::Alpha;\npub fn root() {}\n",
            "a.rs": "pub struct Alpha;\npub fn one() { crate::b::two(); crate::c::three(); crate::root(); }\n",
            "b.rs": "use super::a::Alpha;\npub fn two() { let _ = Alpha; }\n",
            "c.rs": "// crate::a::one() in a comment\npub fn three() -> &'static str { \"crate::a::one\" }\n"
                    "#[cfg(test)]\nmod tests {\n    use crate::Alpha;\n}\n",
        }
        for name, text in files.items():
            with open(os.path.join(src, name), "w") as f:
                f.write(text)
        found = file_circles.crate_circles(os.path.join(src, "lib.rs"), d)
        assert [sorted(f) for f, _ in found] == [["src/a.rs", "src/b.rs"]], found
        with open(os.path.join(src, "b.rs"), "w") as f:
            f.write("pub fn two() {}\n")
        assert file_circles.crate_circles(os.path.join(src, "lib.rs"), d) == []
    # A name that holds "as" is a name, not an alias.
    found = file_circles.expand("crate::{baseline, x as y}")
    assert found == ["crate::baseline", "crate::x@as@y"], found
    print("layers: the circle self-test finds a loop of two files and nothing in a re-export, a test or a comment")


if __name__ == "__main__":
    main()
