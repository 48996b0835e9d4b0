import { describe, expect, it } from "vitest";
import { fireEvent, render, screen } from "@testing-library/svelte";
import Splitter from "./Splitter.svelte";

// jsdom has no PointerEvent: a mouse event with a pointer id stands in.
if (!("PointerEvent" in globalThis)) {
  class PointerEventShim extends MouseEvent {
    pointerId: number;
    constructor(type: string, init: MouseEventInit & { pointerId?: number } = {}) {
      super(type, init);
      this.pointerId = init.pointerId ?? 0;
    }
  }
  Object.assign(globalThis, { PointerEvent: PointerEventShim });
}

function setup(side: "left" | "right", value = 300) {
  const calls: string[] = [];
  render(Splitter, { side, value, min: 200, max: 400, label: "Width", testid: "split", onresize: (w: number) => calls.push(`resize ${w}`), oncommit: (w: number) => calls.push(`keep ${w}`) });
  return { el: screen.getByTestId("split"), calls };
}

describe("Splitter", () => {
  it("moves its edge the way the arrow points, within the limits, and keeps each move", async () => {
    // The session list's edge is on its right: ArrowRight widens it.
    const left = setup("right");
    expect(left.el.getAttribute("role")).toBe("separator");
    expect(left.el.getAttribute("aria-valuenow")).toBe("300");
    await fireEvent.keyDown(left.el, { key: "ArrowRight" });
    await fireEvent.keyDown(left.el, { key: "End" });
    expect(left.calls).toEqual(["resize 316", "keep 316", "resize 400", "keep 400"]);
  });

  it("on a column's left edge, ArrowLeft and dragging left widen it", async () => {
    const right = setup("left", 390);
    await fireEvent.keyDown(right.el, { key: "ArrowLeft" });
    expect(right.calls).toEqual(["resize 400", "keep 400"]); // capped at the maximum
    right.calls.length = 0;
    await fireEvent.pointerDown(right.el, { button: 0, clientX: 500, pointerId: 1 });
    await fireEvent.pointerMove(right.el, { clientX: 450, pointerId: 1 });
    await fireEvent.pointerMove(right.el, { clientX: 700, pointerId: 1 });
    await fireEvent.pointerUp(right.el, { pointerId: 1 });
    // Dragging follows the pointer from where it started (the width the parent gave, 390).
    expect(right.calls).toEqual(["resize 400", "resize 200", "keep 390"]);
  });
});
