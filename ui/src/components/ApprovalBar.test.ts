import { describe, expect, it } from "vitest";
import { fireEvent, render, screen, waitFor } from "@testing-library/svelte";
import ApprovalBar from "./ApprovalBar.svelte";
import type { Answer, GoalOp, QuestionOf } from "../lib/types";
import { planApproval } from "../test/questions";

function setup(p: Partial<QuestionOf<"plan_approval">>, extra: Record<string, unknown> = {}) {
  const answers: Answer[] = [];
  render(ApprovalBar, { review: planApproval(p), onanswer: (a: Answer) => answers.push(a), ...extra });
  return answers;
}

async function parse(text: string): Promise<{ op: GoalOp } | { error: string }> {
  if (text === "tokens=40K turns=6") return { op: { op: "edit_budget", budget: { tokens: { to: 40000 }, turns: { to: 6 } } } };
  if (text === "tokens=40K turns=3") return { op: { op: "edit_budget", budget: { tokens: { to: 40000 }, turns: { to: 3 } } } };
  return { error: `cannot read \`${text}\`` };
}

describe("ApprovalBar", () => {
  it("answers approve, not now and reject", async () => {
    const answers = setup({ version: 2 });
    expect(screen.getByText("v2")).toBeTruthy();
    await fireEvent.click(screen.getByTestId("approve"));
    await fireEvent.click(screen.getByTestId("defer"));
    await fireEvent.click(screen.getByTestId("reject"));
    expect(answers).toEqual([{ answer: "approve", option: null }, { answer: "defer" }, { answer: "reject" }]);
  });

  it("sends revision feedback only when there is some", async () => {
    const answers = setup({ version: 1 });
    await fireEvent.click(screen.getByTestId("revise"));
    const send = screen.getByTestId("revise-send") as HTMLButtonElement;
    expect(send.disabled).toBe(true);
    await fireEvent.input(screen.getByTestId("revise-text"), { target: { value: "  add tests  " } });
    await fireEvent.click(send);
    expect(answers).toEqual([{ answer: "revise", text: "add tests" }]);
    expect(screen.getByTestId("approve")).toBeTruthy(); // back to the buttons
  });

  it("offers the plan's options and approves the chosen one", async () => {
    const answers = setup({ version: 3, options: ["Keep an alias", "Rename everywhere"] });
    await fireEvent.click(screen.getByLabelText("Rename everywhere"));
    await fireEvent.click(screen.getByTestId("approve"));
    expect(answers).toEqual([{ answer: "approve", option: 2 }]);
  });

  it("approves as a goal with the plan's budget, edited, and refuses one that does not read", async () => {
    const answers = setup({ version: 2, budget: "budget=40K turns=6", steps: ["a", "b"] }, { parse });
    await fireEvent.click(screen.getByTestId("approve-goal"));
    const tokens = screen.getByTestId("approve-goal-tokens") as HTMLInputElement;
    const turns = screen.getByTestId("approve-goal-turns") as HTMLInputElement;
    expect([tokens.value, turns.value, (screen.getByTestId("approve-goal-time") as HTMLInputElement).value]).toEqual(["40K", "6", ""]);
    await fireEvent.input(turns, { target: { value: "lots" } });
    await fireEvent.click(screen.getByTestId("approve-goal-send"));
    expect(await screen.findByTestId("approve-goal-problem")).toBeTruthy();
    expect(answers).toEqual([]);
    await fireEvent.input(turns, { target: { value: "3" } });
    await fireEvent.click(screen.getByTestId("approve-goal-send"));
    await waitFor(() => expect(answers).toEqual([{ answer: "approve", option: null, as_goal: { tokens: { to: 40000 }, turns: { to: 3 } } }]));
  });

  it("reads a budget line into fields and back, leaving empty fields out", async () => {
    const { budgetFields, budgetLine } = await import("./ApprovalBar.svelte");
    expect(budgetFields("budget=40K turns=6 time=1h cost=$5")).toEqual({ tokens: "40K", turns: "6", time: "1h", cost: "$5" });
    // `tokens=` is the word everywhere; the form writes it.
    expect(budgetFields("tokens=30K turns=2")).toEqual({ tokens: "30K", turns: "2", time: "", cost: "" });
    expect(budgetLine({ tokens: "30K", turns: "", time: "", cost: "" })).toBe("tokens=30K");
    expect(budgetFields("turns=3")).toEqual({ tokens: "", turns: "3", time: "", cost: "" });
    expect(budgetLine({ tokens: " 50 K", turns: "", time: "2h", cost: "" })).toBe("tokens=50K time=2h");
    expect(budgetLine({ tokens: "", turns: "", time: "", cost: "$0.50" })).toBe("cost=$0.50");
    expect(budgetLine({ tokens: "", turns: "", time: "", cost: "" })).toBe("");
  });

  it("sends the line comments with the revise, general text optional", async () => {
    const drafts = [{ start: 5, end: 6, text: "Why two steps?", quote: "x\ny" }];
    const answers = setup({ version: 1 }, { drafts });
    await fireEvent.click(screen.getByTestId("revise"));
    const send = screen.getByTestId("revise-send") as HTMLButtonElement;
    expect(send.disabled).toBe(false);
    expect(send.textContent).toContain("Revise with 1 comment");
    await fireEvent.click(send);
    expect(answers).toEqual([{ answer: "revise", text: "", comments: [{ start: 5, end: 6, text: "Why two steps?" }] }]);
  });

  it("approves as a goal in a new worktree when that is ticked, and offers it only when it can", async () => {
    const handed: [number | null, unknown][] = [];
    const answers = setup({ version: 1, budget: "budget=40K turns=6" }, { parse, onworktree: async (o: number | null, g: unknown) => (handed.push([o, g]), true) });
    await fireEvent.click(screen.getByTestId("approve-goal"));
    await fireEvent.click(screen.getByTestId("approve-goal-worktree"));
    expect(screen.getByTestId("approve-goal-send").textContent).toContain("new worktree");
    await fireEvent.click(screen.getByTestId("approve-goal-send"));
    await waitFor(() => expect(handed).toHaveLength(1));
    expect(handed[0]).toEqual([null, { tokens: { to: 40000 }, turns: { to: 6 } }]);
    expect(answers).toEqual([]);
  });

  it("has no worktree choice without a way to make one", async () => {
    setup({ version: 1 });
    await fireEvent.click(screen.getByTestId("approve-goal"));
    expect(screen.queryByTestId("approve-goal-worktree")).toBeNull();
  });

  it("approves with A and opens Revise… with R, the caret in its box, outside a text field", async () => {
    const answers = setup({ version: 1 });
    const approve = screen.getByTestId("approve");
    const revise = screen.getByTestId("revise");
    // The keys are shown on the buttons, hidden from screen readers, which read aria-keyshortcuts.
    expect([approve, revise].map((b) => [b.querySelector("kbd")?.textContent, b.querySelector("kbd")?.getAttribute("aria-hidden"), b.getAttribute("aria-keyshortcuts")])).toEqual([
      ["A", "true", "A"],
      ["R", "true", "R"],
    ]);
    await fireEvent.keyDown(document.body, { key: "r" });
    const box = await screen.findByTestId("revise-text");
    await waitFor(() => expect(document.activeElement).toBe(box));
    // In the box, the letters are text.
    await fireEvent.keyDown(box, { key: "a" });
    expect(answers).toEqual([]);
    await fireEvent.click(screen.getByText("Cancel"));
    await fireEvent.keyDown(document.body, { key: "a" });
    expect(answers).toEqual([{ answer: "approve", option: null }]);
  });

  it("takes no key typed in a field, held with a modifier, meant for a dialog, or while busy", async () => {
    const answers = setup({ version: 1 });
    const field = document.body.appendChild(document.createElement("input"));
    const dialog = document.body.appendChild(Object.assign(document.createElement("div"), { tabIndex: -1 }));
    dialog.setAttribute("aria-modal", "true");
    try {
      await fireEvent.keyDown(field, { key: "a" });
      await fireEvent.keyDown(dialog, { key: "a" });
      await fireEvent.keyDown(document.body, { key: "a", ctrlKey: true });
      await fireEvent.keyDown(document.body, { key: "A", shiftKey: true });
      expect(answers).toEqual([]);
      expect(screen.queryByTestId("revise-text")).toBeNull();
    } finally {
      field.remove();
      dialog.remove();
    }
  });

  it("takes no key while it is hidden (the side panel closed) or while busy", async () => {
    const answers: Answer[] = [];
    const { rerender } = render(ApprovalBar, { review: planApproval({ version: 1 }), onanswer: (a: Answer) => answers.push(a), busy: true });
    await fireEvent.keyDown(document.body, { key: "a" });
    await rerender({ busy: false });
    screen.getByTestId("approval-bar").parentElement?.setAttribute("hidden", "");
    await fireEvent.keyDown(document.body, { key: "a" });
    expect(answers).toEqual([]);
  });

  it("approves the chosen option with A", async () => {
    const answers = setup({ version: 3, options: ["Keep an alias", "Rename everywhere"] });
    const second = screen.getByLabelText("Rename everywhere");
    await fireEvent.click(second);
    // A radio button is no text field: A from it approves.
    await fireEvent.keyDown(second, { key: "a" });
    expect(answers).toEqual([{ answer: "approve", option: 2 }]);
  });
});
