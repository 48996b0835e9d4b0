// Where a rewind can go, named as the user knows it: the start of a turn, called after what
// started it ("before your message “…”") and the time it was taken, never by its turn number
// or checkpoint id; and what the window says after one (the banner that offers Undo, then
// "Undone").
import type { CheckpointView_Serialize } from "../bindings";
import type { Item, SessionState } from "./session";

/** A turn the session can be rewound to the start of. `label` starts in lower case ("before
 *  your message “…”"), to follow "Rewind to"; `time` is when its checkpoint was taken. */
export type RewindPoint = { turn: number; label: string; time: number };

/** How much of a message a label quotes. */
const QUOTED = 60;

const quote = (text: string) => {
  const line = text.split("\n").find((l) => l.trim() !== "")?.trim() ?? "";
  return line.length > QUOTED ? `${line.slice(0, QUOTED - 1).trimEnd()}…` : line;
};

/** The turn an item belongs to, when it is part of one. */
const turnOf = (it: Item): number | undefined => (it.kind === "user" ? it.turn : it.kind === "assistant" ? it.turnId : undefined);

/** The first item of each turn, with the item before it (what started a turn that no
 *  message of the user's did: a card, a chip). */
function turnStarts(items: Item[]): Map<number, { first: Item; before: Item | undefined }> {
  const starts = new Map<number, { first: Item; before: Item | undefined }>();
  items.forEach((it, i) => {
    const turn = turnOf(it);
    if (turn !== undefined && !starts.has(turn)) starts.set(turn, { first: it, before: items[i - 1] });
  });
  return starts;
}

function labelOf(start: { first: Item; before: Item | undefined } | undefined): string {
  if (start?.first.kind === "user") return `before your message “${quote(start.first.text)}”`;
  if (start?.before?.kind === "card") return `before “${start.before.title}”`;
  if (start?.before?.kind === "chip" && start.before.tone === "goal") return "before the goal's next turn";
  return "before the agent's turn";
}

/** What to call a rewind to the start of `turn` ("before your message “…”"). */
export function turnLabel(items: Item[], turn: number): string {
  return labelOf(turnStarts(items).get(turn));
}

/**
 * The turns of the transcript still in the conversation that have a checkpoint taken as they
 * started, newest first.
 */
export function rewindPoints(items: Item[], rewound: number[], checkpoints: CheckpointView_Serialize[]): RewindPoint[] {
  const out = new Set(rewound);
  const starts = turnStarts(items);
  const points: RewindPoint[] = [];
  for (const c of checkpoints) {
    if (c.trigger !== "turn_start" || c.turn === null || out.has(c.turn) || !starts.has(c.turn)) continue;
    if (points.some((p) => p.turn === c.turn)) continue;
    points.push({ turn: c.turn, label: labelOf(starts.get(c.turn)), time: c.time });
  }
  return points.sort((a, b) => b.turn - a.turn);
}

/** `label` as the start of a sentence. */
export const capitalized = (label: string) => label.charAt(0).toUpperCase() + label.slice(1);

/** The message of the user's that started `turn`, as they wrote it; null when something else
 *  started it (a goal's turn, an answer). A conversation rewound to before it puts it back in
 *  the composer. */
export function promptOf(items: Item[], turn: number): string | null {
  const first = turnStarts(items).get(turn)?.first;
  return first?.kind === "user" && first.source === "user" ? first.text : null;
}

/** What the banner over the transcript says of the newest rewind: what it changed, with Undo;
 *  "Undone" once Undo went through (no second Undo: that would only redo the rewind); or
 *  nothing once closed. */
export type RewindBanner = { kind: "rewound"; undo: string; files: number; turns: number } | { kind: "undone"; undo: string };

/**
 * The banner for the session's newest rewind. `undone`: the checkpoint Undo rewound to (the
 * rewind it undid kept the state there), so the rewind that lands on it is the undo itself;
 * `dismissed`: the undo checkpoint of the banner the user closed.
 */
export function rewindBanner(last: SessionState["lastRewind"], undone: string | null, dismissed: string | null): RewindBanner | null {
  if (!last || last.undo === dismissed) return null;
  if (last.undid || last.checkpoint === undone) return { kind: "undone", undo: last.undo };
  return { kind: "rewound", undo: last.undo, files: last.files, turns: last.turns };
}
