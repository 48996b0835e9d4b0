import { describe, expect, it } from "vitest";
import { fireEvent, render } from "@testing-library/svelte";
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

const headlineOf = (view: { getByTestId: (id: string) => HTMLElement }) => view.getByTestId("tool-headline").textContent;

describe("ToolCall (headline)", () => {
  it("headlines a call in words, the tool's own name only in the fold", async () => {
    const view = render(ToolCall, { ...props(item({ name: "read_file", args: { path: "/ws/src/main.rs" }, output: "fn main() {}" })), workspace: "/ws" });
    expect(headlineOf(view)).toBe("Read src/main.rs");
    expect(view.getByTestId("tool-arg").textContent).toBe("src/main.rs");
    expect(view.getByTestId("tool-call").querySelector("summary")?.textContent).not.toContain("read_file");
    expect(view.queryByTestId("tool-name")).toBeNull();
    // Unfolded: the tool's name beside the raw arguments' toggle.
    await view.rerender({ ...props(item({ name: "read_file", args: { path: "/ws/src/main.rs" }, output: "fn main() {}" })), workspace: "/ws", open: true });
    expect(view.getByTestId("tool-name").textContent).toBe("read_file");
    await fireEvent.click(view.getByTestId("tool-raw-toggle"));
    expect(view.getByTestId("tool-raw").textContent).toContain('"path": "/ws/src/main.rs"');
  });

  it("headlines an MCP tool by its own name and its server", () => {
    const view = render(ToolCall, props(item({ name: "mcp__everything__get-tiny-image" })));
    expect(headlineOf(view)).toBe("Called get-tiny-image on everything");
    expect(view.getByTestId("tool-arg").textContent).toBe("get-tiny-image");
    expect(view.getByTestId("tool-headline").textContent).not.toContain("mcp__");
    // The full name stays where tests look for it.
    expect(view.getByTestId("tool-call").dataset.tool).toBe("mcp__everything__get-tiny-image");
  });

  it("says a command's exit code, and a running command as going on", async () => {
    const bash = (p: Partial<ToolItem>) => props(item({ name: "bash", args: { command: "cargo test\n--all" }, ...p }));
    const view = render(ToolCall, bash({ status: "running" }));
    expect(headlineOf(view)).toBe("Running cargo test …");
    expect(view.queryByTestId("tool-status")).toBeNull();
    await view.rerender(bash({ status: "ok", output: "ok\n[exit code: 0]" }));
    expect(headlineOf(view)).toBe("Ran cargo test …");
    expect(view.getByTestId("tool-status").textContent).toBe("exit 0");
    expect(view.container.querySelector(".tool.failed")).toBeNull();
    await view.rerender(bash({ status: "error", output: "boom\n[exit code: 101]" }));
    expect(view.getByTestId("tool-status").textContent).toBe("exit 101");
    expect(view.container.querySelector(".tool.failed")).not.toBeNull();
  });

  it("shows a command the user stopped as stopped, not as an error", () => {
    const view = render(ToolCall, props(item({ name: "bash", args: { command: "sleep 100" }, status: "error", output: "(no output)\n[stopped by the user; the command and its child processes were killed]" })));
    expect(headlineOf(view)).toBe("Ran sleep 100");
    expect(view.getByTestId("tool-status").textContent).toBe("stopped");
    expect(view.container.querySelector(".failed")).toBeNull();
    expect(view.container.textContent).not.toContain("error");
  });

  it("shows the agent asking for help as a question, never as denied", () => {
    const ask = { mode: "status", status: "blocked", message: "Which database should the tests use?" };
    for (const status of ["ok", "denied"] as const) {
      const view = render(ToolCall, props(item({ name: "update_goal", args: ask, status, output: "" })));
      expect(headlineOf(view)).toBe("Asked you for help: Which database should the tests use?");
      expect(view.container.querySelector(".failed")).toBeNull();
      expect(view.queryByTestId("tool-status")?.textContent ?? "").not.toContain("denied");
      view.unmount();
    }
  });

  it("still shows a refusal in red", () => {
    const view = render(ToolCall, props(item({ name: "write", args: { path: "a.rs" }, status: "denied", output: "Plan mode: `write` is not allowed." })));
    expect(headlineOf(view)).toBe("Wrote a.rs");
    expect(view.getByTestId("tool-status").textContent).toBe("denied");
    expect(view.container.querySelector(".tool.failed")).not.toBeNull();
  });
});

describe("ToolCall (MCP)", () => {
  it("shows a progress bar while the call runs, and takes it away when the result arrives", async () => {
    seq = 0;
    const name = "mcp__everything__trigger-long-running-operation";
    let s = [
      ev("turn.started", { turn_id: 1, message_id: 1, source: "user" }),
      ev("tool.call", { turn_id: 1, call_id: "c1", name, arguments: { duration: 4, steps: 8 } }),
      ev("tool.progress", { turn_id: 1, call_id: "c1", progress: 3, total: 8, message: "Step 3 of <b>8</b>" }, true),
    ].reduce(applyEvent, emptySession(S));
    const view = render(ToolCall, props(toolOf(s)));
    expect(headlineOf(view)).toBe("Calling trigger-long-running-operation on everything…");
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

describe("ToolCall (a subagent's transcript)", () => {
  it("shows the subagent's calls under the task call, live, and folds them away on a click", async () => {
    const child = item({ callId: "ta-1", name: "bash", args: { command: "ls src" }, status: "running", subagent: 1 });
    const task = item({ callId: "t1", name: "task", args: { description: "look", prompt: "look around" }, status: "running", agent: "explore", children: [child] });
    const view = render(ToolCall, { ...props(task), workspace: "/ws" });
    const nested = view.getByTestId("subagent-transcript") as HTMLDetailsElement;
    expect(nested.open).toBe(true);
    expect(view.getByTestId("subagent-summary").textContent).toContain("explore");
    expect(view.getByTestId("subagent-summary").textContent).toContain("1 call so far, working…");
    const calls = nested.querySelectorAll("[data-testid=tool-call]");
    expect(calls).toHaveLength(1);
    expect(calls[0].getAttribute("data-tool")).toBe("bash");
    await view.rerender({ ...props({ ...task, status: "ok", children: [{ ...child, status: "ok" }, { ...child, callId: "ta-2", name: "read_file", args: { path: "/ws/a" } }] }), workspace: "/ws" });
    expect(view.getByTestId("subagent-summary").textContent).toContain("2 calls");
    expect(view.getByTestId("subagent-summary").textContent).not.toContain("working");
    await fireEvent.click(view.getByTestId("subagent-summary"));
    expect((view.getByTestId("subagent-transcript") as HTMLDetailsElement).open).toBe(false);
  });

  it("shows nothing nested for a call without a subagent", () => {
    const view = render(ToolCall, props(item({ name: "bash", args: { command: "ls" } })));
    expect(view.queryByTestId("subagent-transcript")).toBeNull();
  });
});
