import { describe, expect, it, vi } from "vitest";
import { fireEvent, render, screen, waitFor } from "@testing-library/svelte";
import type { Item } from "../lib/session";

// The session's checkpoints: one as each of its two turns started, one before a tool call;
// the preview of a rewind to the first turn.
vi.mock("../bindings", () => {
  const ok = <T,>(data: T) => Promise.resolve({ status: "ok" as const, data });
  const at = new Date(2026, 0, 2, 9, 30, 0).getTime();
  const cp = (turn: number, trigger: string, minutes: number) => ({ id: `cp-m1x2k9a1${turn}${minutes}abcd`, turn, time: at + minutes * 60_000, trigger, changed: [] });
  return {
    commands: {
      checkpoints: () => ok([cp(1, "turn_start", 0), cp(1, "before_tool", 1), cp(2, "turn_start", 5)]),
      rewindPreview: () => ok({ checkpoint: cp(1, "turn_start", 0), files: [], turns: [1, 2] }),
    },
  };
});

const { default: RewindList } = await import("./RewindList.svelte");
const { default: RewindDialog } = await import("./RewindDialog.svelte");

const items: Item[] = [
  { kind: "user", key: "m1", text: "Add a greeting", source: "user", turn: 1 },
  { kind: "assistant", key: "a1", turnId: 1, text: "Done.", tools: [] },
  { kind: "user", key: "m2", text: "Make it say good morning", source: "user", turn: 2 },
  { kind: "assistant", key: "a2", turnId: 2, text: "Done.", tools: [] },
];

describe("the rewind list (/rewind)", () => {
  it("lists where the session can go back to by message and time, newest first; a click opens that one", async () => {
    const picked: number[] = [];
    render(RewindList, { props: { sessionId: "s1", items, rewound: [], running: false, onpick: (t: number) => picked.push(t), onclose: () => {} } });
    await waitFor(() => expect(screen.getAllByTestId("rewind-point")).toHaveLength(2));
    const shown = screen.getAllByTestId("rewind-point").map((b) => b.textContent?.replace(/\s+/g, " ").trim());
    expect(shown[0]).toMatch(/^Before your message “Make it say good morning” (\d{4}-\d\d-\d\d )?09:35$/);
    expect(shown[1]).toMatch(/^Before your message “Add a greeting” (\d{4}-\d\d-\d\d )?09:30$/);
    expect(screen.getByTestId("rewind-list").textContent).not.toMatch(/cp-|turn \d/);
    await fireEvent.click(screen.getAllByTestId("rewind-point")[1]);
    expect(picked).toEqual([1]);
  });

  it("offers no point while the agent works, and says why", async () => {
    render(RewindList, { props: { sessionId: "s1", items, rewound: [], running: true, onpick: () => {}, onclose: () => {} } });
    await waitFor(() => expect(screen.getAllByTestId("rewind-point")).toHaveLength(2));
    expect(screen.getAllByTestId("rewind-point").every((b) => (b as HTMLButtonElement).disabled)).toBe(true);
    expect(screen.getByTestId("rewind-list-running")).toBeTruthy();
  });
});

describe("the rewind preview", () => {
  it("names the point by the message and time, never by the turn's number or the checkpoint's id", async () => {
    render(RewindDialog, { props: { sessionId: "s1", turn: 1, label: "before your message “Add a greeting”", onclose: () => {}, onrewind: async () => null } });
    expect(screen.getByTestId("rewind-title").textContent).toBe("Rewind to before your message “Add a greeting”?");
    await waitFor(() => expect(screen.getByTestId("rewind-dialog").textContent).toContain("09:30:00"));
    const text = screen.getByTestId("rewind-dialog").textContent ?? "";
    expect(text).not.toMatch(/cp-|turn 1\b/);
  });
});
