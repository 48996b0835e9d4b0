import { describe, expect, it } from "vitest";
import { fireEvent, render, screen, waitFor } from "@testing-library/svelte";
import GoalPanel from "./GoalPanel.svelte";
import type { Goal, GoalOp } from "../lib/types";

const line = (limit: number | null) => ({ limit, used: 10, remaining: limit === null ? null : limit - 10, reached: false });
const goal: Goal = { goal_id: "g1", objective: "ship", criteria: null, status: "active", reason: "created", actor: "user", revision: 1, budget: { tokens: line(5000), main_turns: line(null), active_seconds: line(3600) }, over_budget: false, question: null };

/** Stands in for the app's `/goal` grammar: the texts these tests type, and an error. */
async function parse(text: string): Promise<{ op: GoalOp } | { error: string }> {
  const known: Record<string, GoalOp> = {
    "budget=20K turns=clear time=3600s": { op: "edit_budget", budget: { tokens: { to: 20_000 }, turns: "clear", seconds: { to: 3600 } } },
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

describe("GoalPanel", () => {
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

  it("asks nothing of a goal blocked without a question, or not blocked", () => {
    setup({ ...goal, status: "blocked", reason: "no_progress", actor: "runtime" });
    expect(screen.queryByTestId("goal-question")).toBeNull();
  });

  it("sends its buttons as typed goal ops", async () => {
    const { ops } = setup(goal);
    await fireEvent.click(screen.getByTestId("goal-pause"));
    await fireEvent.click(screen.getByTestId("goal-clear"));
    expect(ops).toEqual([{ op: "pause" }, { op: "clear" }]);
  });

  it("saves the whole budget form as one change, and keeps it open when a field is wrong", async () => {
    const { ops, texts } = setup(goal);
    await fireEvent.click(screen.getByTestId("goal-budget"));
    expect((screen.getByTestId("budget-time") as HTMLInputElement).value).toBe("3600s");
    await fireEvent.input(screen.getByTestId("budget-turns"), { target: { value: "ten" } });
    await fireEvent.click(screen.getByTestId("budget-save"));
    expect(texts).toEqual(["budget=5000 turns=ten time=3600s"]);
    expect(ops).toEqual([]);
    expect((await screen.findByTestId("goal-problem")).textContent).toContain("`budget=5000 turns=ten time=3600s`");
    await fireEvent.input(screen.getByTestId("budget-tokens"), { target: { value: "20K" } });
    await fireEvent.input(screen.getByTestId("budget-turns"), { target: { value: "" } });
    await fireEvent.click(screen.getByTestId("budget-save"));
    await waitFor(() => expect(screen.queryByTestId("budget-save")).toBeNull());
    expect(ops).toEqual([{ op: "edit_budget", budget: { tokens: { to: 20_000 }, turns: "clear", seconds: { to: 3600 } } }]);
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
