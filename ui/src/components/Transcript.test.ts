import { beforeAll, describe, expect, it } from "vitest";
import { fireEvent, render } from "@testing-library/svelte";
import Transcript from "./Transcript.svelte";
import { emptySession, type Item, type SessionState } from "../lib/session";

beforeAll(() => {
  // jsdom has no layout, so no ResizeObserver: rows keep their estimated height.
  globalThis.ResizeObserver ??= class {
    observe() {}
    unobserve() {}
    disconnect() {}
  } as unknown as typeof ResizeObserver;
});

function session(items: Item[]): SessionState {
  return { ...emptySession("s1"), items };
}

describe("Transcript", () => {
  it("puts only the rows near the viewport in the page, however long the transcript", () => {
    const items: Item[] = Array.from({ length: 5000 }, (_, i) => ({ kind: "user", key: `m${i}`, text: `message ${i}`, source: "user" }));
    const { container } = render(Transcript, { state: session(items) });
    const rows = container.querySelectorAll(".row");
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThan(60);
    expect(container.querySelector("[data-testid=transcript]")!.getAttribute("data-items")).toBe("5000");
  });

  it("adds a tool call's arguments and output only when it is unfolded", async () => {
    const items: Item[] = [
      {
        kind: "assistant",
        key: "a1",
        turnId: 1,
        text: "Reading it.",
        tools: [{ callId: "c1", name: "read_file", args: { path: "big.log" }, status: "ok", output: "LINE-ONE\nLINE-TWO", verifier: false }],
      },
    ];
    const { container } = render(Transcript, { state: session(items) });
    const details = container.querySelector("[data-testid=tool-call]") as HTMLDetailsElement;
    expect(details.textContent).toContain("big.log");
    expect(container.querySelector("pre.out")).toBeNull();

    details.open = true;
    await fireEvent(details, new Event("toggle"));
    expect(container.querySelector("pre.out")?.textContent).toBe("LINE-ONE\nLINE-TWO");
    expect(container.querySelector("pre.args")?.textContent).toContain('"path": "big.log"');

    details.open = false;
    await fireEvent(details, new Event("toggle"));
    expect(container.querySelector("pre.out")).toBeNull();
  });
});
