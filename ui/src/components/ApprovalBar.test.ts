import { describe, expect, it } from "vitest";
import { fireEvent, render, screen } from "@testing-library/svelte";
import ApprovalBar from "./ApprovalBar.svelte";
import type { Answer, QuestionOf } from "../lib/types";
import { planApproval } from "../test/questions";

function setup(p: Partial<QuestionOf<"plan_approval">>) {
  const answers: Answer[] = [];
  render(ApprovalBar, { review: planApproval(p), onanswer: (a: Answer) => answers.push(a) });
  return answers;
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
});
