import { describe, expect, it } from "vitest";
import { fireEvent, render, screen } from "@testing-library/svelte";
import QuickPicker from "./QuickPicker.svelte";
import type { SessionSummary } from "../lib/types";

const s = (id: string, title: string, workspace: string) =>
  ({ id, title, workspace, created_at: 0, updated_at: 0, interaction_mode: "default", permission_mode: "ask", model: null, queued: 0, pending_questionnaire: null }) as SessionSummary;

describe("QuickPicker", () => {
  it("narrows by title or folder and opens the one chosen with the arrows and Enter", async () => {
    const picked: string[] = [];
    render(QuickPicker, { sessions: [s("a", "Fix the parser", "/w/alpha"), s("b", "Write docs", "/w/beta"), s("c", "Parser tests", "/w/beta")], onpick: (id: string) => picked.push(id), onclose: () => {} });
    const input = screen.getByTestId("quick-picker-input");
    expect(document.activeElement).toBe(input);
    await fireEvent.input(input, { target: { value: "parser" } });
    expect(screen.getAllByTestId("quick-picker-item").map((b) => b.textContent?.trim())).toEqual(["Fix the parser alpha", "Parser tests beta"]);
    await fireEvent.keyDown(input, { key: "ArrowDown" });
    await fireEvent.keyDown(input, { key: "Enter" });
    await fireEvent.input(input, { target: { value: "beta" } });
    await fireEvent.keyDown(input, { key: "Enter" });
    expect(picked).toEqual(["c", "b"]);
  });
});
