import { describe, expect, it } from "vitest";
import { budgetText, burnDown, compact, duration, gaugeLevel, timeline } from "./goal";
import type { WireEvent } from "./types";

const line = (limit: number | null, used: number) => ({ limit, used, remaining: limit === null ? null : Math.max(0, limit - used), reached: limit !== null && used >= limit });
const usage = (i: number, o: number) => ({ input_tokens: i, output_tokens: o, cached_tokens: 0 });

describe("goal figures", () => {
  it("colours gauges by how much of the limit is used", () => {
    expect(gaugeLevel(line(null, 500))).toBe("open");
    expect(gaugeLevel(line(100, 10))).toBe("ok");
    expect(gaugeLevel(line(100, 80))).toBe("warn");
    expect(gaugeLevel(line(100, 95))).toBe("danger");
    expect(gaugeLevel(line(100, 100))).toBe("danger");
  });

  it("burns down tokens per turn since the newest goal", () => {
    const events = [
      { type: "turn.finished", seq: 1, usage: usage(999, 1) },
      { type: "goal.create", seq: 2, goal: { goal_id: "g" } },
      { type: "turn.finished", seq: 3, usage: usage(300, 100) },
      { type: "goal.update", seq: 4, kind: "completion", status: "active", reason: "created", actor: "runtime" },
      { type: "turn.finished", seq: 5, usage: usage(500, 100) },
    ] as unknown as WireEvent[];
    expect(burnDown(events, 1000)).toEqual([
      { step: 1, used: 400, spent: 400, remaining: 600 },
      { step: 2, used: 1000, spent: 600, remaining: 0 },
    ]);
    expect(burnDown(events.slice(0, 1), 1000)).toEqual([]);
  });

  it("lists lifecycle changes with actors, skipping ordinary settled turns", () => {
    const events = [
      { type: "goal.create", seq: 1, ts: 0, goal: { objective: "ship it", actor: "user" } },
      { type: "goal.update", seq: 2, ts: 0, kind: "completion", status: "active", reason: "created", actor: "runtime" },
      { type: "goal.update", seq: 3, ts: 0, kind: "completion", status: "blocked", reason: "worker_reported", actor: "model" },
      { type: "goal.update", seq: 4, ts: 0, kind: "lifecycle", status: "paused", reason: "user_requested", actor: "user" },
    ] as unknown as WireEvent[];
    expect(timeline(events).map((r) => [r.label, r.actor, r.tone])).toEqual([
      ["Created: ship it", "user", "neutral"],
      ["blocked — worker reported", "model", "bad"],
      ["paused — user requested", "user", "neutral"],
    ]);
  });

  it("writes the budget form as /goal text, an empty field clearing its limit", () => {
    expect(budgetText({ tokens: " 20K ", turns: "", time: "90s" })).toBe("budget=20K turns=clear time=90s");
  });

  it("formats figures compactly", () => {
    expect(compact(950)).toBe("950");
    expect(compact(1234)).toBe("1.2K");
    expect(compact(45_600)).toBe("46K");
    expect(compact(2_500_000)).toBe("2.5M");
    expect(duration(42)).toBe("42s");
    expect(duration(250)).toBe("4m 10s");
    expect(duration(3900)).toBe("1h 05m");
  });
});
