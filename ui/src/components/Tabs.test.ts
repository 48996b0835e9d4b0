import { describe, expect, it } from "vitest";
import { createRawSnippet } from "svelte";
import { fireEvent, render, screen } from "@testing-library/svelte";
import Tabs from "./Tabs.svelte";

const tabs = ["plan", "goal", "notes"] as const;
type T = (typeof tabs)[number];

function setup(selected: T = "plan") {
  const picked: T[] = [];
  const view = render(Tabs<T>, {
    tabs,
    selected,
    label: "Session details",
    onselect: (t: T) => picked.push(t),
    tab: createRawSnippet((t: () => T) => ({ render: () => `<span>${t()}</span>` })),
    children: createRawSnippet(() => ({ render: () => "<p>content</p>" })),
  });
  return { picked, view };
}

describe("Tabs", () => {
  it("has tablist, tab and tabpanel roles tied together", () => {
    setup("goal");
    expect(screen.getByRole("tablist").getAttribute("aria-label")).toBe("Session details");
    const all = screen.getAllByRole("tab");
    expect(all.map((t) => t.getAttribute("aria-selected"))).toEqual(["false", "true", "false"]);
    // Only the selected tab is in the Tab order; arrows reach the others.
    expect(all.map((t) => t.tabIndex)).toEqual([-1, 0, -1]);
    const panel = screen.getByRole("tabpanel");
    for (const t of all) expect(t.getAttribute("aria-controls")).toBe(panel.id);
    expect(panel.getAttribute("aria-labelledby")).toBe(all[1].id);
    expect(screen.getByTestId("tab-goal")).toBe(all[1]);
  });

  it("moves with Left/Right (wrapping) and Home/End, focusing and selecting the tab", async () => {
    const { picked } = setup("plan");
    const all = screen.getAllByRole("tab");
    all[0].focus();
    await fireEvent.keyDown(all[0], { key: "ArrowRight" });
    expect(document.activeElement).toBe(all[1]);
    await fireEvent.keyDown(all[0], { key: "ArrowLeft" });
    expect(document.activeElement).toBe(all[2]);
    await fireEvent.keyDown(all[1], { key: "End" });
    await fireEvent.keyDown(all[2], { key: "Home" });
    await fireEvent.keyDown(all[2], { key: "ArrowRight" });
    expect(picked).toEqual(["goal", "notes", "notes", "plan", "plan"]);
    await fireEvent.keyDown(all[0], { key: "a" });
    expect(picked).toHaveLength(5);
  });
});
