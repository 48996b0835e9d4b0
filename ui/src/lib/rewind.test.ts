import { describe, expect, it } from "vitest";
import type { CheckpointView_Serialize } from "../bindings";
import { capitalized, promptOf, rewindBanner, rewindPoints, turnLabel } from "./rewind";
import type { Item } from "./session";

const user = (key: string, turn: number, text: string): Item => ({ kind: "user", key, text, source: "user", turn });
const reply = (key: string, turnId: number): Item => ({ kind: "assistant", key, turnId, text: "Done.", tools: [] });
const started = (turn: number, time: number): CheckpointView_Serialize => ({ id: `cp-m1x2k9a10${turn}abcd`, turn, time, trigger: "turn_start", changed: [] });

/** Two messages of the user's, a turn the goal went on with, and one started by a card. */
const items: Item[] = [
  user("m1", 1, "Add a greeting to the script"),
  reply("a1", 1),
  user("m2", 2, "Now make it say good morning instead, and keep the name argument as it is please"),
  reply("a2", 2),
  { kind: "chip", key: "e9-message.admitted", text: "Goal continues", tone: "goal" },
  reply("a3", 3),
  { kind: "card", key: "m4", tone: "plan", title: "Implementing the approved plan v2", words: null, detail: "…", action: "show-plan", qid: "q1", from: { message_id: 4, text: "…" } },
  reply("a4", 4),
];

describe("rewind points", () => {
  it("names each turn after what started it, never by its number or checkpoint", () => {
    expect(turnLabel(items, 1)).toBe("before your message “Add a greeting to the script”");
    // A long message is quoted in part.
    expect(turnLabel(items, 2)).toBe("before your message “Now make it say good morning instead, and keep the name arg…”");
    expect(turnLabel(items, 3)).toBe("before the goal's next turn");
    expect(turnLabel(items, 4)).toBe("before “Implementing the approved plan v2”");
    expect(turnLabel(items, 9)).toBe("before the agent's turn");
    expect(capitalized(turnLabel(items, 1))).toBe("Before your message “Add a greeting to the script”");
  });

  it("lists the turns still in the conversation that have a checkpoint, newest first, with its time", () => {
    const checkpoints: CheckpointView_Serialize[] = [
      started(1, 1_000),
      { id: "cp-m1x2k9a1t1abcd", turn: 1, time: 1_500, trigger: "before_tool", tool: "write", changed: [] },
      started(2, 2_000),
      started(3, 3_000),
      // A rewind's own checkpoint, and a turn the transcript does not hold: no point.
      { id: "cp-m1x2k9a1rwabcd", turn: null, time: 3_500, trigger: "rewind", changed: [] },
      started(7, 7_000),
    ];
    const points = rewindPoints(items, [3], checkpoints);
    expect(points).toEqual([
      { turn: 2, label: "before your message “Now make it say good morning instead, and keep the name arg…”", time: 2_000 },
      { turn: 1, label: "before your message “Add a greeting to the script”", time: 1_000 },
    ]);
    for (const p of points) expect(p.label).not.toMatch(/cp-|turn \d/);
  });
});

describe("after a rewind", () => {
  it("finds the message of the user's a turn started with, to put back in the composer", () => {
    expect(promptOf(items, 2)).toBe("Now make it say good morning instead, and keep the name argument as it is please");
    // A goal's turn or an answer's: nothing of the user's to put back.
    expect(promptOf(items, 3)).toBeNull();
    expect(promptOf(items, 4)).toBeNull();
    expect(promptOf(items, 9)).toBeNull();
  });

  it("offers Undo, then says Undone without offering it again, and is gone once closed", () => {
    const rewound = { checkpoint: "cp-2", undo: "cp-u1", files: 2, turns: 1, undid: false };
    expect(rewindBanner(rewound, null, null)).toEqual({ kind: "rewound", undo: "cp-u1", files: 2, turns: 1 });
    // Undo rewinds to cp-u1; the rewind that lands there is the undo.
    const undo = { checkpoint: "cp-u1", undo: "cp-u2", files: 2, turns: 0, undid: false };
    expect(rewindBanner(undo, "cp-u1", null)).toEqual({ kind: "undone", undo: "cp-u2" });
    // Known from the session's own log too (a window opened later, an undo from the terminal).
    expect(rewindBanner({ ...undo, undid: true }, null, null)).toEqual({ kind: "undone", undo: "cp-u2" });
    expect(rewindBanner(undo, "cp-u1", "cp-u2")).toBeNull();
    // A later rewind of the user's offers Undo again.
    expect(rewindBanner({ checkpoint: "cp-1", undo: "cp-u3", files: 0, turns: 2, undid: false }, "cp-u1", "cp-u2")?.kind).toBe("rewound");
    expect(rewindBanner(null, null, null)).toBeNull();
  });
});
