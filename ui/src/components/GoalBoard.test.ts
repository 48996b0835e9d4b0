import { describe, expect, it, vi } from "vitest";
import { render, screen, within } from "@testing-library/svelte";
import type { BoardRow_Serialize as BoardRow } from "../bindings";
import type { Goal } from "../lib/types";

// The rows the app would return: one priced session, one partly priced, one with no price.
const app = vi.hoisted(() => ({ rows: [] as unknown[] }));
vi.mock("../bindings", () => ({
  commands: { goalBoard: async () => ({ status: "ok", data: app.rows }) },
}));

const { default: GoalBoard } = await import("./GoalBoard.svelte");

const line = { limit: null, used: 0, remaining: null, reached: false };
const goal: Goal = { goal_id: "g", objective: "ship", criteria: null, status: "active", reason: "created", actor: "user", revision: 1, budget: { tokens: line, main_turns: line, active_seconds: line }, over_budget: false, question: null, usage_limit: null, steps: [] };
function row(id: string, micros: number, unpriced_calls: number): BoardRow {
  return {
    session: { id, workspace: `/w/${id}`, title: null, created_at: 0, updated_at: 0, interaction_mode: "default", permission_mode: "ask", model: null, queued: 0, pending_questionnaire: null },
    goal: { ...goal, budget: { ...goal.budget, cost: { limit: null, used: micros, remaining: null, reached: false }, cost_unpriced_calls: unpriced_calls } },
    queue: [],
    spend: { micros, unpriced_calls },
    last_activity: 0,
    open_here: false,
  };
}

describe("GoalBoard", () => {
  it("labels the cost column and says each cost as the Goal tab does", async () => {
    app.rows = [row("priced", 12_300, 0), row("partly", 12_300, 2), row("unpriced", 0, 3)];
    render(GoalBoard, { onopen: () => {}, onreply: async () => true, ongoal: async () => true, parse: async () => ({ error: "unused" }) });
    await screen.findAllByTestId("board-row");
    expect(screen.getByTestId("board-cost-head").textContent).toContain("Cost");
    const cost = (id: string) => {
      const r = screen.getAllByTestId("board-row").find((e) => e.dataset.sessionId === id)!;
      return [within(r).getByTestId("board-cost").textContent, within(r).getByTestId("board-gauge-cost").getAttribute("title")];
    };
    expect(cost("priced")).toEqual(["$0.0123", "Cost: $0.0123 (no limit)"]);
    expect(cost("partly")).toEqual(["≥ $0.0123", "Cost: ≥ $0.0123 (no limit)"]);
    expect(cost("unpriced")).toEqual(["no price known for this model", "Cost: no price known for this model (no limit)"]);
    expect(document.body.textContent).not.toContain("unknown");
    expect(document.body.textContent).not.toContain("$0.00");
  });

  it("shows a session's queue under its row and sends its changes to that session", async () => {
    const queued = { ...row("busy", 0, 0), queue: [{ id: 4, objective: "then the docs", tokens: null, turns: 3, seconds: null, cost_micros: null }] };
    app.rows = [queued, row("idle", 0, 0)];
    const sent: [string, unknown][] = [];
    render(GoalBoard, { onopen: () => {}, onreply: async () => true, ongoal: async (id: string, op: unknown) => (sent.push([id, op]), true), parse: async () => ({ error: "unused" }) });
    const rows = await screen.findAllByTestId("board-row");
    expect(rows.map((r) => within(r).queryByTestId("board-queue") !== null)).toEqual([true, false]);
    expect(within(rows[0]).getByTestId("queued-text").textContent).toBe("then the docs");
    within(rows[0]).getByTestId("queued-remove").click();
    await vi.waitFor(() => expect(sent).toEqual([["busy", { op: "unqueue", id: 4 }]]));
  });

  it("shows no column label when no session has a goal", async () => {
    app.rows = [];
    render(GoalBoard, { onopen: () => {}, onreply: async () => true, ongoal: async () => true, parse: async () => ({ error: "unused" }) });
    await screen.findByText(/No session has a goal yet/);
    expect(screen.queryByTestId("board-cost-head")).toBeNull();
  });
});
