import { describe, expect, it } from "vitest";
import type { PlanModeReason } from "../bindings";
import { planModeNotice } from "./plan";

describe("plan mode in words", () => {
  it("says plan mode turned on, and what that means, in one line", () => {
    expect(planModeNotice("plan", "command")).toBe("Plan mode is on: your next messages are planned, not implemented (the plan shows in the Plan tab).");
    expect(planModeNotice("plan", "agent")).toContain("as you agreed");
  });

  it("says why it went off in words, never the runtime's reason code", () => {
    expect(planModeNotice("default", "approved")).toBe("Plan mode is off: you approved the plan, and the agent implements it.");
    expect(planModeNotice("default", "command")).toBe("Plan mode is off: nothing from the plan was implemented.");
    const reasons: PlanModeReason[] = ["command", "intent", "agent", "approved", "rejected", "withdrawn", "auto"];
    for (const r of reasons) {
      const line = planModeNotice("default", r);
      expect(line).not.toMatch(/\(\w+\)|undefined/);
      expect(line.split("\n")).toHaveLength(1);
    }
  });
});
