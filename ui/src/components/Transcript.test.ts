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

  it("adds a tool call's output only when it is unfolded, its raw arguments one click further", async () => {
    const items: Item[] = [
      {
        kind: "assistant",
        key: "a1",
        turnId: 1,
        text: "Reading it.",
        tools: [{ callId: "c1", name: "read_file", args: { path: "big.log" }, status: "ok", output: "LINE-ONE\nLINE-TWO", verifier: false, changes: [] }],
      },
    ];
    const { container } = render(Transcript, { state: session(items) });
    const details = container.querySelector("[data-testid=tool-call]") as HTMLDetailsElement;
    expect(details.textContent).toContain("big.log");
    expect(container.querySelector("pre.out")).toBeNull();

    details.open = true;
    await fireEvent(details, new Event("toggle"));
    expect(container.querySelector("pre.out")?.textContent).toBe("LINE-ONE\nLINE-TWO");
    expect(container.querySelector("pre.args")).toBeNull();
    await fireEvent.click(container.querySelector("[data-testid=tool-raw-toggle]")!);
    expect(container.querySelector("pre.args")?.textContent).toContain('"path": "big.log"');
    await fireEvent.click(container.querySelector("[data-testid=tool-raw-toggle]")!);

    details.open = false;
    await fireEvent(details, new Event("toggle"));
    expect(container.querySelector("pre.out")).toBeNull();
  });

  it("shows an edit's diff and a command's exit code, with paths under the workspace relative", async () => {
    const diff = "--- a/src/a.rs\n+++ b/src/a.rs\n@@ -1 +1 @@\n-old\n+new\n";
    const items: Item[] = [
      {
        kind: "assistant",
        key: "a1",
        turnId: 1,
        text: "",
        tools: [
          { callId: "c1", name: "edit", args: { path: "/ws/src/a.rs" }, status: "ok", output: "edited", verifier: false, changes: [{ path: "src/a.rs", op: "edit", diff, note: null, resolved: "/ws/src/a.rs" }] },
          { callId: "c2", name: "bash", args: { command: "false" }, status: "error", output: "nope\n[exit code: 1]", verifier: false, changes: [] },
        ],
      },
    ];
    const { container } = render(Transcript, { state: { ...session(items), workspace: "/ws" } });
    const [edit, bash] = [...container.querySelectorAll("[data-testid=tool-call]")] as HTMLDetailsElement[];
    expect(edit.querySelector("[data-testid=tool-arg]")?.textContent).toBe("src/a.rs");
    expect(bash.querySelector("[data-testid=tool-status]")?.textContent).toBe("exit 1");
    edit.open = true;
    await fireEvent(edit, new Event("toggle"));
    const lines = [...edit.querySelectorAll("[data-testid=tool-diff] .l")].map((l) => `${l.className.replace(/svelte-\S+/g, "").trim()}|${l.textContent}`);
    expect(lines).toEqual(["l hunk|@@ -1 +1 @@", "l del|-old", "l add|+new"]);
    bash.open = true;
    await fireEvent(bash, new Event("toggle"));
    expect(bash.querySelector("[data-testid=tool-output]")?.textContent).toBe("nope");
  });
});
