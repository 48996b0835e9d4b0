import { describe, expect, it } from "vitest";
import { render, screen } from "@testing-library/svelte";
import GoalChecks from "./GoalChecks.svelte";
import { checksSummary, timeline } from "../lib/goal";
import type { GoalCheckState } from "../bindings";
import type { WireEvent } from "../lib/types";

const run = (at: number, exit_code: number | null, passed: number | null, failed: number | null) => ({ at, exit_code, passed, failed });
const cargo: GoalCheckState = { command: "cargo test", baseline: run(1, 101, 12, 28), runs: [run(2, 101, 30, 10), run(3, 0, 40, 0)] };
const lint: GoalCheckState = { command: "make lint", baseline: run(1, 2, null, null), runs: [] };

describe("GoalChecks", () => {
  it("adds the tests passing over every check, and counts checks when a runner says no numbers", () => {
    expect(checksSummary([cargo])).toEqual({ passed: 40, total: 40, unit: "tests" });
    expect(checksSummary([{ ...cargo, runs: [] }])).toEqual({ passed: 12, total: 40, unit: "tests" });
    expect(checksSummary([cargo, lint])).toEqual({ passed: 1, total: 2, unit: "checks" });
    expect(checksSummary([])).toBeNull();
  });

  it("shows the count, a column per run from the baseline on, and what weakened the checks", () => {
    render(GoalChecks, { props: { checks: [cargo], weakened: ["`cargo test` ran 40 tests at the start and 38 now", "`tests/a.rs` gained 1 skip marker"] } });
    expect(screen.getByTestId("goal-checks-count").textContent).toBe("40 / 40");
    expect(screen.getByTestId("goal-check-state").textContent).toBe("40/40 tests passing");
    expect(screen.getByTestId("goal-check-baseline").textContent).toBe("At the start: 12/40 tests passing");
    expect(screen.getByTestId("goal-check-history").querySelectorAll(".run")).toHaveLength(3);
    const items = screen.getAllByTestId("goal-weakened-item").map((e) => e.textContent);
    expect(items).toEqual(["cargo test ran 40 tests at the start and 38 now", "tests/a.rs gained 1 skip marker"]);
    expect(screen.getAllByTestId("goal-weakened-item")[0].querySelector("code")?.textContent).toBe("cargo test");
  });

  it("says nothing of weakening when nothing weakened, and nothing at all without checks", () => {
    const { unmount } = render(GoalChecks, { props: { checks: [lint], weakened: [] } });
    expect(screen.queryByTestId("goal-weakened")).toBeNull();
    expect(screen.getByTestId("goal-check-state").textContent).toBe("fails (exit 2)");
    unmount();
    render(GoalChecks, { props: { checks: [], weakened: [] } });
    expect(screen.queryByTestId("goal-checks")).toBeNull();
  });

  it("puts each check run in the timeline, the baseline named", () => {
    const events = [
      { seq: 1, ts: 1, type: "goal.check", goal_id: "g", command: "cargo test", exit_code: 101, duration_ms: 1500, passed: 12, failed: 28, tail: "", baseline: true },
      { seq: 2, ts: 2, type: "goal.check", goal_id: "g", command: "cargo test", exit_code: 0, duration_ms: 900, passed: 40, failed: 0, tail: "", baseline: false },
    ] as unknown as WireEvent[];
    expect(timeline(events).map((r) => [r.label, r.tone])).toEqual([
      ["Baseline check `cargo test` fails (exit 101), 12/40 tests passing in 1.5 s", "bad"],
      ["Check `cargo test` passes, 40/40 tests passing in 0.9 s", "good"],
    ]);
  });
});
