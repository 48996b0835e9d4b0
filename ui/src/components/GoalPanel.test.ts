import { describe, expect, it, vi } from "vitest";
import { fireEvent, render, screen, waitFor } from "@testing-library/svelte";
import GoalPanel from "./GoalPanel.svelte";
import type { Goal, GoalOp } from "../lib/types";

const line = (limit: number | null) => ({ limit, used: 10, remaining: limit === null ? null : limit - 10, reached: false });
const goal: Goal = { goal_id: "g1", objective: "ship", criteria: null, status: "active", reason: "created", actor: "user", revision: 1, budget: { tokens: line(5000), main_turns: line(null), active_seconds: line(3600) }, over_budget: false, question: null, usage_limit: null, steps: [] };

/** Stands in for the app's `/goal` grammar: the texts these tests type, and an error. */
async function parse(text: string): Promise<{ op: GoalOp } | { error: string }> {
  const known: Record<string, GoalOp> = {
    "tokens=20K turns=clear time=3600s cost=clear": { op: "edit_budget", budget: { tokens: { to: 20_000 }, turns: "clear", seconds: { to: 3600 }, cost: "clear" } },
    "Fix the build time=2h": { op: "set", objective: "Fix the build", budget: { seconds: { to: 7200 } }, replace: false },
    "turns=3": { op: "edit_budget", budget: { turns: { to: 3 } } },
  };
  return known[text] ? { op: known[text] } : { error: `cannot read \`${text}\`` };
}

function setup(g: Goal | null, accept = true) {
  const ops: GoalOp[] = [];
  const texts: string[] = [];
  render(GoalPanel, {
    props: { goal: g, events: [], ongoal: async (op: GoalOp) => (ops.push(op), accept), parse: (t: string) => (texts.push(t), parse(t)) },
  });
  return { ops, texts };
}

describe("GoalPanel drafts", () => {
  it("drafts a goal from rough words, lets it be edited, and sets only what the user sets", async () => {
    const ops: GoalOp[] = [];
    const asked: string[] = [];
    const draft = async (t: string) => (asked.push(t), { draft: { objective: "Make the parser accept trailing commas", criteria: ["cargo test -p parser passes", "a test covers [1, 2,]"], tokens: 150_000, turns: 12, seconds: 2700, reasoning: "One module." } });
    const parseBudget = async (t: string): Promise<{ op: GoalOp } | { error: string }> =>
      t === "tokens=150000 turns=12 time=2700s" ? { op: { op: "edit_budget", budget: { tokens: { to: 150_000 }, turns: { to: 12 }, seconds: { to: 2700 } } } } : { error: `cannot read ${t}` };
    render(GoalPanel, { props: { goal: null, events: [], ongoal: async (op: GoalOp) => (ops.push(op), true), parse: parseBudget, draft } });
    await fireEvent.input(screen.getByTestId("goal-new"), { target: { value: "parser should take trailing commas" } });
    await fireEvent.click(screen.getByTestId("goal-draft"));
    await screen.findByTestId("goal-draft-form");
    expect(asked).toEqual(["parser should take trailing commas"]);
    expect(ops).toEqual([]);
    expect((screen.getByTestId("goal-draft-criteria") as HTMLTextAreaElement).value).toBe("cargo test -p parser passes\na test covers [1, 2,]");
    expect(screen.getByTestId("goal-draft-reasoning").textContent).toContain("One module.");
    await fireEvent.input(screen.getByTestId("goal-draft-criteria"), { target: { value: "cargo test -p parser passes\n\n" } });
    // Checks the runtime runs, one per line, blank lines left out.
    await fireEvent.input(screen.getByTestId("goal-draft-checks"), { target: { value: "cargo test -p parser\n\n npm test \n" } });
    await fireEvent.click(screen.getByTestId("goal-draft-set"));
    await waitFor(() => expect(ops.length).toBe(1));
    expect(ops[0]).toEqual({ op: "set", objective: "Make the parser accept trailing commas", budget: { tokens: { to: 150_000 }, turns: { to: 12 }, seconds: { to: 2700 } }, replace: false, criteria: "cargo test -p parser passes", checks: ["cargo test -p parser", "npm test"] });
  });

  it("drafts once from `/goal draft` words and lets the ask go", async () => {
    const asked: string[] = [];
    let let_go = 0;
    const draft = async (t: string) => (asked.push(t), { draft: { objective: t, criteria: [], tokens: null, turns: null, seconds: null, reasoning: "" } });
    render(GoalPanel, { props: { goal: null, events: [], ongoal: async () => true, parse, draft, ask: { text: "tidy the docs", n: 1 }, onasked: () => let_go++ } });
    await screen.findByTestId("goal-draft-form");
    expect(asked).toEqual(["tidy the docs"]);
    expect(let_go).toBe(1);
  });

  it("says what went wrong when the draft fails, and asks for words first", async () => {
    render(GoalPanel, { props: { goal: null, events: [], ongoal: async () => true, parse, draft: async () => ({ error: "the model could not draft the goal: offline" }) } });
    await fireEvent.click(screen.getByTestId("goal-draft"));
    expect((await screen.findByTestId("goal-problem")).textContent).toContain("Say roughly");
    await fireEvent.input(screen.getByTestId("goal-new"), { target: { value: "x" } });
    await fireEvent.click(screen.getByTestId("goal-draft"));
    await waitFor(() => expect(screen.getByTestId("goal-problem").textContent).toContain("offline"));
    expect(screen.queryByTestId("goal-draft-form")).toBeNull();
  });
});

describe("GoalPanel", () => {
  it("counts down a goal's wait, shows its check, and wakes it on request", async () => {
    vi.useFakeTimers({ toFake: ["Date", "setInterval", "clearInterval"] });
    try {
      const now = Date.now();
      const wait = { reason: "CI run 42", since: now, until: now + 125_000, check: "gh run view 42", every_seconds: 60, deadline: now + 86_400_000, last_check: { at: now, passed: false, exit_code: 1, line: "in progress" }, next_check: now + 60_000, counted_to: now };
      const { ops } = setup({ ...goal, reason: "waiting", actor: "model", wait });
      const text = () => screen.getByTestId("goal-wait-text").textContent;
      expect(text()).toContain("Waiting for `gh run view 42` to succeed — checked every 60 s");
      expect(text()).toContain("in 2m 05s");
      expect(text()).toContain("CI run 42");
      expect(screen.getByTestId("goal-wait-check").textContent).toBe("Last check exit 1: in progress. Next check in 1m 00s.");
      await vi.advanceTimersByTimeAsync(5_000);
      expect(text()).toContain("in 2m 00s");
      await fireEvent.click(screen.getByTestId("goal-wake-now"));
      expect(ops).toEqual([{ op: "wake_now" }]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("shows what the agent asked of a blocked goal and sends the answer as a reply", async () => {
    const blocked: Goal = { ...goal, status: "blocked", reason: "worker_reported", actor: "model", question: "Should names with quotes be rejected or escaped?" };
    const { ops } = setup(blocked);
    expect(screen.getByTestId("goal-question").textContent).toContain("Should names with quotes be rejected or escaped?");
    const send = screen.getByTestId("goal-reply-send") as HTMLButtonElement;
    expect(send.disabled).toBe(true);
    await fireEvent.input(screen.getByTestId("goal-reply"), { target: { value: "Escape them." } });
    await fireEvent.click(send);
    await waitFor(() => expect(ops).toEqual([{ op: "reply", text: "Escape them." }]));
    await waitFor(() => expect((screen.getByTestId("goal-reply") as HTMLTextAreaElement).value).toBe(""));
  });

  it("counts down a usage limit that resumes by itself, with resume-now and cancel", async () => {
    vi.useFakeTimers({ toFake: ["Date", "setInterval", "clearInterval"] });
    try {
      const resets = Date.now() + 65_000;
      const limited: Goal = { ...goal, status: "usage_limited", reason: "rate_limited", actor: "runtime", usage_limit: { resets_at: resets, from_provider: true, auto_resume: true, auto_resumes_used: 0, auto_resumes_max: 3 } };
      const { ops } = setup(limited);
      const box = screen.getByTestId("goal-limit");
      expect(box.dataset.auto).toBe("true");
      expect(screen.getByTestId("goal-limit-text").textContent).toContain("Resumes by itself in 1m 05s");
      expect(screen.getByTestId("goal-limit-text").textContent).toContain("automatic resume 1 of 3");
      await vi.advanceTimersByTimeAsync(5_000);
      expect(screen.getByTestId("goal-limit-text").textContent).toContain("in 1m 00s");
      await fireEvent.click(screen.getByTestId("goal-cancel-auto"));
      await fireEvent.click(screen.getByTestId("goal-resume-now"));
      expect(ops).toEqual([{ op: "pause" }, { op: "resume" }]);
    } finally {
      vi.useRealTimers();
    }
  });

  it("says why a usage limit does not resume by itself, and offers no cancel", () => {
    const l = { resets_at: Date.now() + 600_000, from_provider: false, auto_resume: false, auto_resumes_used: 3, auto_resumes_max: 3 };
    setup({ ...goal, status: "usage_limited", reason: "rate_limited", actor: "runtime", usage_limit: l });
    expect(screen.getByTestId("goal-limit-text").textContent).toMatch(/backoff.*No automatic resumes left \(3 in a row allowed\)/);
    expect(screen.queryByTestId("goal-cancel-auto")).toBeNull();
    expect(screen.getByTestId("goal-resume-now")).toBeTruthy();
  });

  it("asks nothing of a goal blocked without a question, or not blocked", () => {
    setup({ ...goal, status: "blocked", reason: "no_progress", actor: "runtime" });
    expect(screen.queryByTestId("goal-question")).toBeNull();
  });

  it("sends its buttons as typed goal ops", async () => {
    const { ops } = setup(goal);
    await fireEvent.click(screen.getByTestId("goal-pause"));
    await fireEvent.click(screen.getByTestId("goal-clear"));
    await fireEvent.click(screen.getByTestId("goal-clear-yes"));
    expect(ops).toEqual([{ op: "pause" }, { op: "clear" }]);
  });

  it("asks before clearing the goal, and keeps it when told to", async () => {
    const { ops } = setup(goal);
    await fireEvent.click(screen.getByTestId("goal-clear"));
    expect(ops).toEqual([]);
    const ask = screen.getByTestId("goal-clear-confirm");
    expect(ask.getAttribute("role")).toBe("group");
    expect(ask.textContent).toContain("Clear the goal “ship”?");
    await fireEvent.click(screen.getByTestId("goal-clear-no"));
    expect(screen.queryByTestId("goal-clear-confirm")).toBeNull();
    expect(ops).toEqual([]);
    await fireEvent.click(screen.getByTestId("goal-clear"));
    await fireEvent.click(screen.getByTestId("goal-clear-yes"));
    expect(ops).toEqual([{ op: "clear" }]);
    expect(screen.queryByTestId("goal-clear-confirm")).toBeNull();
  });

  it("saves the whole budget form as one change, and keeps it open when a field is wrong", async () => {
    const { ops, texts } = setup(goal);
    await fireEvent.click(screen.getByTestId("goal-budget"));
    expect((screen.getByTestId("budget-time") as HTMLInputElement).value).toBe("3600s");
    await fireEvent.input(screen.getByTestId("budget-turns"), { target: { value: "ten" } });
    await fireEvent.click(screen.getByTestId("budget-save"));
    expect(texts).toEqual(["tokens=5000 turns=ten time=3600s cost=clear"]);
    expect(ops).toEqual([]);
    expect((await screen.findByTestId("goal-problem")).textContent).toContain("`tokens=5000 turns=ten time=3600s cost=clear`");
    await fireEvent.input(screen.getByTestId("budget-tokens"), { target: { value: "20K" } });
    await fireEvent.input(screen.getByTestId("budget-turns"), { target: { value: "" } });
    await fireEvent.click(screen.getByTestId("budget-save"));
    await waitFor(() => expect(screen.queryByTestId("budget-save")).toBeNull());
    expect(ops).toEqual([{ op: "edit_budget", budget: { tokens: { to: 20_000 }, turns: "clear", seconds: { to: 3600 }, cost: "clear" } }]);
  });

  it("shows the cost against its budget, and says when calls had no price", async () => {
    const costly: Goal = { ...goal, budget: { ...goal.budget, cost: { limit: 5_000_000, used: 1_234_567, remaining: 3_765_433, reached: false }, cost_unpriced_calls: 2 } };
    setup(costly);
    const gauge = screen.getByTestId("gauge-cost");
    expect(gauge.textContent).toContain("≥ $1.23");
    expect(gauge.textContent).toContain("$5.00");
    expect(screen.getByTestId("goal-cost-unknown").textContent).toContain("No price known for this model for 2 calls: the cost is at least this");
  });

  it("says a cost with no priced call in words, with no $0 gauge or chart of zeros", () => {
    const unpriced: Goal = { ...goal, budget: { ...goal.budget, cost: { limit: null, used: 0, remaining: null, reached: false }, cost_unpriced_calls: 3 } };
    const created = { session_id: "s", seq: 1, ts: 1, transient: false, type: "goal.create", goal: { objective: "ship", actor: "user" } };
    const finished = (seq: number) => ({ session_id: "s", seq, ts: seq, transient: false, type: "turn.finished", turn_id: seq, reason: "completed", usage: { input_tokens: 5, output_tokens: 5, cached_tokens: 0 }, steps: 1 });
    render(GoalPanel, { props: { goal: unpriced, events: [created, finished(2), finished(3)] as never, ongoal: async () => true, parse } });
    const gauge = screen.getByTestId("gauge-cost");
    expect(gauge.textContent).toContain("No price known for this model");
    expect(gauge.querySelector("[role=meter]")).toBeNull();
    expect(screen.getByTestId("costdown-unpriced").textContent).toBe("Cost: no price known for this model.");
    expect(screen.getByTestId("costdown").querySelector(".chart")).toBeNull();
    // The tokens chart still draws: its turns are known.
    expect(screen.getByTestId("burndown").querySelector(".chart")).not.toBeNull();
    const panel = gauge.closest("section")?.parentElement?.textContent ?? "";
    expect(panel).not.toMatch(/\$0\.0/);
    expect(panel).not.toContain("unknown");
  });

  it("sets a new goal with the budgets typed after it", async () => {
    const { ops } = setup(null);
    await fireEvent.input(screen.getByTestId("goal-new"), { target: { value: "Fix the build time=2h" } });
    await fireEvent.submit(screen.getByTestId("goal-new").closest("form")!);
    await waitFor(() => expect(ops).toHaveLength(1));
    expect(ops).toEqual([{ op: "set", objective: "Fix the build", budget: { seconds: { to: 7200 } }, replace: false }]);
    // Budgets alone are not a goal: said in the panel, nothing sent.
    await fireEvent.input(screen.getByTestId("goal-new"), { target: { value: "turns=3" } });
    await fireEvent.submit(screen.getByTestId("goal-new").closest("form")!);
    expect((await screen.findByTestId("goal-problem")).textContent).toContain("needs an objective");
    expect(ops).toHaveLength(1);
  });
});

describe("GoalPanel steps", () => {
  it("shows the plan's steps met n/m with each verdict", () => {
    setup({ ...goal, steps: [{ text: "Wrap the call", met: true }, { text: "Add a test", met: false }, { text: "Docs", met: null }] });
    const box = screen.getByTestId("goal-steps");
    expect(box.dataset.met).toBe("1");
    expect(box.dataset.total).toBe("3");
    expect(screen.getByTestId("goal-steps-count").textContent).toBe("1 / 3");
    expect(box.textContent).toContain("✓ Wrap the call");
    expect(box.textContent).toContain("✗ Add a test");
  });

  it("has no steps section for an ordinary goal", () => {
    setup(goal);
    expect(screen.queryByTestId("goal-steps")).toBeNull();
  });
});

describe("a goal started from a plan", () => {
  it("reads as the plan's title and steps; the plan's id and hash wait in a closed fold", () => {
    const criteria = "the approved plan plan-m1x2k9b200a1b2 revision v2 (sha256 0123456789ab) is implemented: every step of it is done: 1. Add the flag; 2. Test it";
    const steps = [{ text: "Add the flag", met: true }, { text: "Test it", met: null }];
    setup({ ...goal, objective: "Add a --shout flag", criteria, steps } as Goal);
    expect(screen.getByTestId("goal-objective").textContent).toBe("Add a --shout flag");
    expect(screen.getByTestId("goal-criteria").textContent).toBe("Done when revision v2 of the approved plan is implemented, every step of it");
    expect(screen.getByTestId("goal-steps").textContent).toContain("Test it");
    const fold = screen.getByTestId("goal-revision") as HTMLDetailsElement;
    expect(fold.open).toBe(false);
    expect(fold.textContent).toContain("plan-m1x2k9b200a1b2");
    expect(fold.textContent).toContain("0123456789ab");
  });
});
