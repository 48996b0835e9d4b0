import { describe, expect, it } from "vitest";
import { fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import GoalQueue from "./GoalQueue.svelte";
import type { GoalOp, QueuedGoal } from "../lib/types";

const q = (id: number, objective: string, extra: Partial<QueuedGoal> = {}): QueuedGoal => ({ id, objective, tokens: null, turns: null, seconds: null, cost_micros: null, ...extra });

/** Stands in for the app's `/goal` grammar: the texts these tests type. */
async function parse(text: string): Promise<{ op: GoalOp } | { error: string }> {
  const known: Record<string, GoalOp> = {
    "next Update the changelog tokens=20K": { op: "queue", objective: "Update the changelog", budget: { tokens: { to: 20_000 } } },
    "turns=5": { op: "edit_budget", budget: { turns: { to: 5 } } },
    "next pause": { op: "pause" },
  };
  return known[text] ? { op: known[text] } : { error: `cannot read \`${text}\`` };
}

function setup(queue: QueuedGoal[], unfinished = true) {
  const ops: GoalOp[] = [];
  render(GoalQueue, { props: { queue, unfinished, ongoal: async (op: GoalOp) => (ops.push(op), true), parse } });
  return ops;
}

const item = (i: number) => screen.getAllByTestId("queued-goal")[i];

describe("GoalQueue", () => {
  it("shows the line in order with each goal's own budgets, ends unable to move past", () => {
    setup([q(7, "docs", { tokens: 20_000, seconds: 7200 }), q(9, "release", { cost_micros: 1_500_000 })]);
    expect(screen.getAllByTestId("queued-text").map((e) => e.textContent)).toEqual(["docs", "release"]);
    expect(item(0).textContent).toContain("tokens=20000 time=2h");
    expect(item(1).textContent).toContain("cost=$1.50");
    expect((within(item(0)).getByTestId("queued-up") as HTMLButtonElement).disabled).toBe(true);
    expect((within(item(1)).getByTestId("queued-down") as HTMLButtonElement).disabled).toBe(true);
  });

  it("moves, removes and adds by the app's ops", async () => {
    const ops = setup([q(7, "docs"), q(9, "release")]);
    await fireEvent.click(within(item(1)).getByTestId("queued-up"));
    await fireEvent.click(within(item(0)).getByTestId("queued-down"));
    await fireEvent.click(within(item(0)).getByTestId("queued-remove"));
    await fireEvent.input(screen.getByTestId("queue-new"), { target: { value: "Update the changelog tokens=20K" } });
    await fireEvent.click(screen.getByTestId("queue-add"));
    await waitFor(() => expect(ops.length).toBe(4));
    expect(ops).toEqual([
      { op: "move_queued", id: 9, to: 0 },
      { op: "move_queued", id: 7, to: 1 },
      { op: "unqueue", id: 7 },
      { op: "queue", objective: "Update the changelog", budget: { tokens: { to: 20_000 } } },
    ]);
  });

  it("refuses text that is not a goal to queue, saying why", async () => {
    const ops = setup([]);
    await fireEvent.input(screen.getByTestId("queue-new"), { target: { value: "oops =" } });
    await fireEvent.click(screen.getByTestId("queue-add"));
    expect((await screen.findByTestId("queue-problem")).textContent).toContain("cannot read");
    expect(ops).toEqual([]);
  });

  it("edits a queued goal: what the budget box leaves out has no limit", async () => {
    const ops = setup([q(7, "docs", { tokens: 20_000 })]);
    await fireEvent.click(within(item(0)).getByTestId("queued-edit"));
    expect((screen.getByTestId("queued-budget") as HTMLInputElement).value).toBe("tokens=20000");
    await fireEvent.input(screen.getByTestId("queued-objective"), { target: { value: "docs for 1.2" } });
    await fireEvent.input(screen.getByTestId("queued-budget"), { target: { value: "turns=5" } });
    await fireEvent.click(screen.getByTestId("queued-save"));
    await waitFor(() => expect(ops).toEqual([{ op: "edit_queued", id: 7, objective: "docs for 1.2", budget: { tokens: "clear", turns: { to: 5 }, seconds: "clear", cost: "clear" } }]));
  });

  it("asks before starting a goal over an unfinished one, and not when none is", async () => {
    const ops = setup([q(7, "docs")]);
    await fireEvent.click(screen.getByTestId("queued-start"));
    expect(screen.getByTestId("queued-start-confirm").textContent).toContain("current goal is cleared");
    expect(ops).toEqual([]);
    await fireEvent.click(screen.getByTestId("queued-start-yes"));
    expect(ops).toEqual([{ op: "start_queued", id: 7 }]);
  });

  it("starts at once when the goal in hand is complete", async () => {
    const ops = setup([q(7, "docs")], false);
    await fireEvent.click(screen.getByTestId("queued-start"));
    expect(screen.queryByTestId("queued-start-confirm")).toBeNull();
    expect(ops).toEqual([{ op: "start_queued", id: 7 }]);
  });
});
