import { describe, expect, it } from "vitest";
import { budgetText, burnDown, compact, costDown, costWords, criteriaShown, duration, gaugeLevel, limitNotice, money, NO_PRICE, nothingPriced, timeline, timeNote, withLiveTime } from "./goal";
import type { Goal, WireEvent } from "./types";

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
      ["The agent says it is blocked", "model", "bad"],
      ["Paused by you", "user", "neutral"],
    ]);
  });

  it("writes the budget form as /goal text, an empty field clearing its limit", () => {
    expect(budgetText({ tokens: " 20K ", turns: "", time: "90s", cost: "" })).toBe("tokens=20K turns=clear time=90s cost=clear");
    expect(budgetText({ tokens: "", turns: "", time: "", cost: "$5" })).toBe("tokens=clear turns=clear time=clear cost=$5");
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

describe("limitNotice", () => {
  const base: Goal = { goal_id: "g", objective: "o", criteria: null, status: "usage_limited", reason: "rate_limited", actor: "runtime", revision: 1, budget: { tokens: { limit: null, used: 0, remaining: null, reached: false }, main_turns: { limit: null, used: 0, remaining: null, reached: false }, active_seconds: { limit: null, used: 0, remaining: null, reached: false } }, over_budget: false, question: null, usage_limit: null, steps: [] };
  const limit = (auto_resume: boolean, used = 0) => ({ resets_at: 1_000_000 + 90_000, from_provider: true, auto_resume, auto_resumes_used: used, auto_resumes_max: 3 });

  it("is for usage-limited goals only", () => {
    expect(limitNotice({ ...base, status: "paused" }, 0)).toBeNull();
  });

  it("counts down to an automatic resume, then says it is resuming", () => {
    const g = { ...base, usage_limit: limit(true, 1) };
    expect(limitNotice(g, 1_000_000)).toMatchObject({ auto: true, left: 90 });
    expect(limitNotice(g, 1_000_000)!.text).toMatch(/^Resumes by itself in 1m 30s, at \d\d:\d\d:\d\d — automatic resume 2 of 3\.$/);
    expect(limitNotice(g, 1_100_000)).toMatchObject({ auto: true, left: 0, text: "The limit has reset: resuming — automatic resume 2 of 3." });
  });

  it("never offers to resume a quota by itself", () => {
    const n = limitNotice({ ...base, reason: "quota_exhausted", usage_limit: { ...limit(false), from_provider: true } }, 1_000_000)!;
    expect(n.auto).toBe(false);
    expect(n.text).toContain("never resumes by itself");
    expect(limitNotice({ ...base, reason: "quota_exhausted" }, 0)!.left).toBeNull();
  });

  it("names a cancelled resume and a cap that is used up", () => {
    expect(limitNotice({ ...base, usage_limit: limit(false, 1) }, 1_000_000)!.text).toContain("The automatic resume was cancelled");
    expect(limitNotice({ ...base, usage_limit: limit(false, 3) }, 1_000_000)!.text).toContain("No automatic resumes left (3 in a row allowed)");
  });
});

describe("cost", () => {
  const finished = (seq: number, turn: number, cost: number | null) =>
    ({ session_id: "s", seq, ts: seq, transient: false, type: "turn.finished", turn_id: turn, reason: "completed", usage: { input_tokens: 1, output_tokens: 1, cached_tokens: 0 }, steps: 1, ...(cost === null ? {} : { cost_usd: cost }) }) as never;
  const created = { session_id: "s", seq: 1, ts: 1, transient: false, type: "goal.create", goal: { objective: "o", actor: "user" } } as never;

  it("reads each turn's cost since the goal was set, an unpriced turn as unknown", () => {
    const points = costDown([created, finished(2, 7, 0.0125), finished(3, 8, null), finished(4, 9, 0.5)], 1_000_000);
    expect(points.map((p) => [p.spent, p.unknown, p.turn])).toEqual([[12_500, false, 7], [0, true, 8], [500_000, false, 9]]);
    expect(points.at(-1)?.remaining).toBe(487_500);
  });

  it("says amounts as the app does", () => {
    expect(money(0)).toBe("$0.00");
    expect(money(12_300)).toBe("$0.0123");
    expect(money(30)).toBe("<$0.0001");
    expect(money(4_200_000)).toBe("$4.20");
    expect(money(1_234_500_000)).toBe("$1,234.50");
  });

  it("says a cost one way when calls had no price", () => {
    expect(costWords(12_300, 0)).toBe("$0.0123");
    expect(costWords(0, 0)).toBe("$0.00");
    expect(costWords(12_300, 2)).toBe("≥ $0.0123");
    expect(costWords(0, 3)).toBe(NO_PRICE);
    expect(NO_PRICE).toBe("no price known for this model");
  });

  it("knows a cost chart with no priced turn from one with a free one", () => {
    expect(nothingPriced(costDown([created, finished(2, 7, null), finished(3, 8, null)], null))).toBe(true);
    expect(nothingPriced(costDown([created, finished(2, 7, null), finished(3, 8, 0)], null))).toBe(false);
    expect(nothingPriced([])).toBe(false);
  });

  it("ties each timeline row to the turn it is about", () => {
    const update = { session_id: "s", seq: 3, ts: 3, transient: false, type: "goal.update", goal_id: "g", kind: "lifecycle", status: "paused", reason: "user_requested", actor: "user", usage: {} } as never;
    const rows = timeline([created, finished(2, 7, null), update]);
    expect(rows.map((r) => r.turn)).toEqual([7, 7]);
  });

  it("counts the time gauge on while a turn runs, and warns a question that may outlive it", () => {
    const g: Goal = { goal_id: "g", objective: "o", criteria: null, status: "active", reason: "created", actor: "runtime", revision: 1, budget: { tokens: line(null, 0), main_turns: line(null, 0), active_seconds: line(600, 100) }, over_budget: false, question: null, usage_limit: null, steps: [] };
    // Idle: it stands still; running: it counts the seconds since the snapshot arrived.
    expect(withLiveTime(g, 1_000, 61_000, false)).toBe(g);
    const live = withLiveTime(g, 1_000, 61_500, true);
    expect(live.budget.active_seconds).toEqual({ limit: 600, used: 160, remaining: 440, reached: false });
    expect(withLiveTime(g, 0, 10_000_000, true).budget.active_seconds).toMatchObject({ remaining: 0, reached: true });
    expect(withLiveTime({ ...g, status: "paused" }, 0, 60_000, true)).toEqual({ ...g, status: "paused" });
    // Plenty of time: no note; under five minutes: the dialog says so; none left: refused.
    expect(timeNote(g)).toBeNull();
    expect(timeNote(withLiveTime(g, 0, 400_000, true))).toContain("runs out in 1m 40s");
    expect(timeNote(withLiveTime(g, 0, 600_000, true))).toContain("will be refused");
    expect(timeNote({ ...g, budget: { ...g.budget, active_seconds: line(null, 5000) } })).toBeNull();
  });
});

describe("a goal's criteria as shown", () => {
  it("reads a plan goal's criteria by the plan's version, its id and hash left for the fold", () => {
    const criteria = "the approved plan plan-m1x2k9b200a1b2 revision v2 (sha256 0123456789ab) is implemented: every step of it is done: 1. Add the flag; 2. Test it";
    expect(criteriaShown(criteria)).toEqual({
      words: "revision v2 of the approved plan is implemented, every step of it",
      detail: "Plan plan-m1x2k9b200a1b2, revision v2, sha256 0123456789ab",
    });
    expect(criteriaShown("the approved plan plan-m1x2k9b200a1b2 revision v1 (sha256 0123456789ab) is implemented").words).toBe("revision v1 of the approved plan is implemented");
    expect(criteriaShown("the tests pass")).toEqual({ words: "the tests pass", detail: null });
  });
});
