import { describe, expect, it } from "vitest";
import { render, screen } from "@testing-library/svelte";
import ChangesPanel from "./ChangesPanel.svelte";
import { applyEvent, emptySession } from "../lib/session";
import type { WireEvent } from "../lib/types";

const S = "s1";
let seq = 0;
const ev = (type: string, body: object) => ({ session_id: S, seq: ++seq, ts: 1_000, transient: false, type, ...body }) as unknown as WireEvent;
const write = (call: string, path: string, resolved: string) => [
  ev("tool.call", { turn_id: 1, call_id: call, name: "write", arguments: { path } }),
  ev("tool.result", { turn_id: 1, call_id: call, name: "write", status: "ok", content: "ok", changes: [{ path, resolved, op: "create", diff: "+x", note: null }] }),
];

describe("ChangesPanel", () => {
  it("does not count the session's own plan file as a change", () => {
    const plan = `/data/sessions/${S}/artifacts/plan.md`;
    const state = write("c1", plan, plan).reduce(applyEvent, emptySession(S));
    const { unmount } = render(ChangesPanel, { state });
    expect(screen.getByTestId("changes-empty")).toBeTruthy();
    expect(screen.queryByTestId("changed-file")).toBeNull();
    unmount();
    const more = write("c2", "notes.md", "/ws/notes.md").reduce(applyEvent, state);
    render(ChangesPanel, { state: more });
    expect(screen.getAllByTestId("changed-file").map((e) => e.querySelector(".path")?.textContent)).toEqual(["notes.md"]);
  });
});
