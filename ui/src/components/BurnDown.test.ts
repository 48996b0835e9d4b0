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

  it("draws a long goal's turns in runs, so 2,500 turns make 60 bars", () => {
    const points = Array.from({ length: 2500 }, (_, i) => ({ step: i + 1, spent: 10, used: 10 * (i + 1), remaining: null }));
    render(BurnDown, { points, limit: null });
    const fig = screen.getByTestId("burndown");
    expect(fig.dataset.points).toBe("2500");
    expect(fig.querySelectorAll(".bar").length).toBeLessThanOrEqual(60);
    const labelled = [...fig.querySelectorAll(".step")].filter((s) => s.textContent !== "");
    expect(labelled.length).toBeLessThanOrEqual(14);
    // Each bar sums its run: 42 turns of 10 tokens.
    expect(screen.getByTestId("burndown-bar-scale").textContent).toBe("420");
  });

  it("says nothing spent as nothing", async () => {
    const { money } = await import("../lib/goal");
    render(BurnDown, { points: [{ step: 1, spent: 0, used: 0, remaining: null, unknown: false }], limit: null, format: money });
    expect(screen.getByTestId("burndown-bar-scale").textContent).toBe("$0.00");
  });

  it("says there is no price instead of drawing a chart of zeros", async () => {
    const { money } = await import("../lib/goal");
    const unknown = (step: number) => ({ step, spent: 0, used: 0, remaining: null, unknown: true });
    const { container, unmount } = render(BurnDown, { points: [unknown(1), unknown(2)], limit: null, format: money, unit: "cost", testid: "costdown" });
    expect(screen.getByTestId("costdown-unpriced").textContent).toBe("Cost: no price known for this model.");
    expect(container.querySelector(".chart")).toBeNull();
    expect(container.textContent).not.toContain("$0");
    unmount();
    // One priced turn among them: the chart, the unpriced bar titled the same way.
    const priced = { step: 3, spent: 12_300, used: 12_300, remaining: null };
    const r = render(BurnDown, { points: [unknown(1), priced], limit: null, format: money, unit: "cost", testid: "costdown" });
    expect(screen.queryByTestId("costdown-unpriced")).toBeNull();
    expect(r.container.querySelector(".bar.unknown")?.getAttribute("title")).toBe("Turn 1: no price known for this model");
  });

  it("keeps every bar and budget mark inside the plot, over budget too", () => {
    const points = [
      { step: 1, spent: 30_000, used: 30_000, remaining: 10_000 },
      { step: 2, spent: 25_000, used: 55_000, remaining: 0 },
    ];
    const { container } = render(BurnDown, { points, limit: 40_000 });
    const share = (el: Element, prop: "height" | "bottom") => Number((el as HTMLElement).style[prop].replace("%", ""));
    for (const b of container.querySelectorAll(".bar")) expect(share(b, "height")).toBeGreaterThan(0), expect(share(b, "height")).toBeLessThanOrEqual(100);
    const marks = [...container.querySelectorAll(".left")].map((m) => share(m, "bottom"));
    expect(marks).toEqual([(10_000 / 55_000) * 100, 0]);
    expect(container.querySelector("svg")).toBeNull();
  });

  it("shows no budget scale without a budget", () => {
    render(BurnDown, { points: [{ step: 1, spent: 10, used: 10, remaining: null }], limit: null });
    expect(screen.queryByTestId("burndown-budget-scale")).toBeNull();
  });
});
