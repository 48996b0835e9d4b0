import { describe, expect, it } from "vitest";
import { render, screen } from "@testing-library/svelte";

const { default: BurnDown } = await import("./BurnDown.svelte");

describe("the burn-down", () => {
  it("gives the bars and the budget line each their scale", () => {
    const points = [
      { step: 1, spent: 1200, used: 1200, remaining: 48_800 },
      { step: 2, spent: 3400, used: 4600, remaining: 45_400 },
    ];
    render(BurnDown, { points, limit: 50_000 });
    expect(screen.getByTestId("burndown-bar-scale").textContent).toBe("3.4K");
    expect(screen.getByTestId("burndown-budget-scale").textContent).toBe("50K");
  });

  it("shows no budget scale without a budget", () => {
    render(BurnDown, { points: [{ step: 1, spent: 10, used: 10, remaining: null }], limit: null });
    expect(screen.queryByTestId("burndown-budget-scale")).toBeNull();
  });
});
