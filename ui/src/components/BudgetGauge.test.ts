import { describe, expect, it } from "vitest";
import { render, screen } from "@testing-library/svelte";
import BudgetGauge from "./BudgetGauge.svelte";

describe("BudgetGauge", () => {
  it("shows used / limit, what is left and a warning colour near the limit", () => {
    render(BudgetGauge, { label: "Tokens", line: { limit: 40_000, used: 31_000, remaining: 9_000, reached: false }, format: String });
    const g = screen.getByTestId("gauge-tokens");
    expect(g.dataset.level).toBe("warn");
    expect(g.textContent).toContain("31000");
    expect(g.textContent).toContain("/ 40000");
    expect(g.textContent).toContain("9000 left");
    expect(screen.getByRole("meter").getAttribute("aria-valuenow")).toBe("78");
  });

  it("says when the limit is reached and when there is none", () => {
    const { unmount } = render(BudgetGauge, { label: "Turns", line: { limit: 8, used: 8, remaining: 0, reached: true }, format: String });
    expect(screen.getByTestId("gauge-turns").dataset.level).toBe("danger");
    expect(screen.getByText("limit reached")).toBeTruthy();
    unmount();
    render(BudgetGauge, { label: "Time", line: { limit: null, used: 30, remaining: null, reached: false }, format: (n: number) => `${n}s` });
    expect(screen.getByTestId("gauge-time").dataset.level).toBe("open");
    expect(screen.getByText("unlimited")).toBeTruthy();
  });
});
