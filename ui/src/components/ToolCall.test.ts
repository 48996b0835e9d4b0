import { describe, expect, it } from "vitest";
import { render } from "@testing-library/svelte";
import ToolCall from "./ToolCall.svelte";
import { applyEvent, emptySession, type SessionState, type ToolItem } from "../lib/session";
import type { WireEvent } from "../lib/types";

const S = "s1";
let seq = 0;
function ev<T extends WireEvent["type"]>(type: T, body: Omit<Extract<WireEvent, { type: T }>, "type" | "session_id" | "seq" | "ts" | "transient">, transient = false): WireEvent {
  if (!transient) seq += 1;
  return { session_id: S, seq, ts: 1_000, transient, type, ...body } as unknown as WireEvent;
}
/** The first tool call of the newest item. */
function toolOf(s: SessionState): ToolItem {
  const it = s.items.at(-1);
  if (it?.kind !== "assistant") throw new Error("no tool call");
  return it.tools[0];
}
const item = (p: Partial<ToolItem>): ToolItem => ({ callId: "c1", name: "mcp__everything__get-tiny-image", args: {}, status: "ok", output: "", verifier: false, changes: [], ...p });
const props = (tool: ToolItem) => ({ tool, workspace: null, open: false, ontoggle: () => {} });

describe("ToolCall (MCP)", () => {
  it("names an MCP tool by its own name beside a badge of its server", () => {
    const { container, getByTestId } = render(ToolCall, props(item({ name: "mcp__everything__get-tiny-image" })));
    expect(getByTestId("server-badge").textContent).toBe("everything");
    expect(container.querySelector(".name")?.textContent).toBe("get-tiny-image");
    // The full name stays where tests and tooltips look for it.
    expect(getByTestId("tool-call").dataset.tool).toBe("mcp__everything__get-tiny-image");
  });

  it("gives another tool no badge", () => {
    const { container, queryByTestId } = render(ToolCall, props(item({ name: "read_file", args: { path: "a.rs" } })));
    expect(queryByTestId("server-badge")).toBeNull();
    expect(container.querySelector(".name")?.textContent).toBe("read_file");
  });

  it("shows a progress bar while the call runs, and takes it away when the result arrives", async () => {
    seq = 0;
    const name = "mcp__everything__trigger-long-running-operation";
    let s = [
      ev("turn.started", { turn_id: 1, message_id: 1, source: "user" }),
      ev("tool.call", { turn_id: 1, call_id: "c1", name, arguments: { duration: 4, steps: 8 } }),
      ev("tool.progress", { turn_id: 1, call_id: "c1", progress: 3, total: 8, message: "Step 3 of <b>8</b>" }, true),
    ].reduce(applyEvent, emptySession(S));
    const view = render(ToolCall, props(toolOf(s)));
    const bar = view.getByTestId("tool-progress") as HTMLProgressElement;
    expect([bar.value, bar.max]).toEqual([3, 8]);
    // The server's words as text.
    expect(view.getByTestId("tool-progress-message").textContent).toBe("Step 3 of <b>8</b>");
    expect(view.container.querySelector("b")).toBeNull();

    // No total: a bar that says it is busy, without a value.
    s = applyEvent(s, ev("tool.progress", { turn_id: 1, call_id: "c1", progress: 4 }, true));
    await view.rerender(props(toolOf(s)));
    expect(view.getByTestId("tool-progress").hasAttribute("value")).toBe(false);
    expect(view.queryByTestId("tool-progress-message")).toBeNull();

    s = applyEvent(s, ev("tool.result", { turn_id: 1, call_id: "c1", name, status: "ok", content: "Long running operation completed." }));
    await view.rerender(props(toolOf(s)));
    expect(view.queryByTestId("tool-progress")).toBeNull();
    expect(view.getByTestId("tool-status").textContent).toBe("ok");
  });

  it("shows the result's images of allowed types inline, and only names the others", () => {
    const images = [
      { mime: "image/png", data: "iVBORw0KGgo=" },
      { mime: "image/svg+xml", data: "PHN2ZyBvbmxvYWQ9ImFsZXJ0KDEpIi8+" },
      { mime: "text/html", data: "PHNjcmlwdD4=" },
    ];
    const { getAllByTestId } = render(ToolCall, props(item({ images })));
    const shown = getAllByTestId("tool-image") as HTMLImageElement[];
    expect(shown).toHaveLength(1);
    expect(shown[0].getAttribute("src")).toBe("data:image/png;base64,iVBORw0KGgo=");
    expect(shown[0].alt).toBe("image returned by get-tiny-image");
    expect(getAllByTestId("tool-image-refused").map((n) => n.textContent)).toEqual(["image of type image/svg+xml not shown", "image of type text/html not shown"]);
  });
});
