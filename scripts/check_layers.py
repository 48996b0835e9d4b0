"""The crate layering, checked from `cargo metadata` (manifests only, no network): each crate's
normal dependencies on other Waymark crates must be among those its layer allows. Crates of
the plan that do not exist yet are skipped; a Waymark crate the table does not know fails.
Usage: check_layers.py            check this workspace
       check_layers.py --self-test   show that a back edge is caught"""

import json
import subprocess
import sys

# What each crate may depend on (normal dependencies, Waymark crates only).
LOW = {"waymark-protocol", "waymark-store", "waymark-tools", "waymark-sandbox", "waymark-provider"}
ALLOWED = {
    "waymark-protocol": set(),
    "waymark-sandbox": {"waymark-protocol"},
    "waymark-provider": {"waymark-protocol"},
    "waymark-store": {"waymark-protocol"},
    "waymark-tools": {"waymark-protocol", "waymark-sandbox"},
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
    # Test helpers are a dev-dependency only (see DEV_ONLY).
    "waymark-test-support": LOW | {"waymark-extension", "waymark-engine", "waymark-runtime",
                                   "waymark-plan", "waymark-goal", "waymark-mcp",
                                   "waymark-checkpoint", "waymark-worktree"},
    "waymark-runtime": LOW | {"waymark-extension", "waymark-engine", "waymark-plan", "waymark-goal",
                              "waymark-mcp", "waymark-checkpoint", "waymark-worktree"},
    # Thin front ends.
    "waymark-cli": {"waymark-protocol", "waymark-runtime"},
    "waymark-desktop": {"waymark-protocol", "waymark-runtime"},
}

# Crates no shipped crate may depend on except as a dev-dependency.
DEV_ONLY = {"waymark-test-support"}


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
        for d in sorted(deps & DEV_ONLY):
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
    meta = json.loads(subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps", "--offline"],
        check=True, capture_output=True, text=True).stdout)
    found = violations(meta["packages"])
    if found:
        sys.exit("layers broken:\n  " + "\n  ".join(found))
    names = sorted(p["name"] for p in meta["packages"] if p["name"].startswith("waymark-"))
    print(f"layers: {len(names)} crates keep to their layers ({', '.join(names)})")


if __name__ == "__main__":
    main()
