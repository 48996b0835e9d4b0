// Line comments on a plan revision (PM-25): ranges, the quoted passage, and finding a passage
// again in another text. Drafts not sent yet are kept with the window's state (uistate.ts).

export type Range = { start: number; end: number };
export type Draft = Range & { text: string; quote: string };

/** The lines of a text as the runtime numbers them: a final newline ends the last line, it
 *  does not start another. */
export function linesOf(text: string): string[] {
  const lines = text.split(/\r?\n/);
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  return lines;
}

/** The range between two clicked lines, in order (1-based, inclusive). */
export function rangeOf(a: number, b: number): Range {
  return a <= b ? { start: a, end: b } : { start: b, end: a };
}

/** Lines `start..=end` of `lines` (1-based). */
export function quoteOf(lines: string[], r: Range): string {
  return lines.slice(r.start - 1, r.end).join("\n");
}

/** Where a commented passage stands in `lines`: the same lines word for word, nearest to
 *  where it was; null when it is gone or changed. A passage that only moved stays attached. */
export function anchor(c: Range & { quote: string }, lines: string[]): Range | null {
  const want = c.quote.split("\n");
  if (want.length === 0 || want.length > lines.length) return null;
  let best: number | null = null;
  for (let i = 0; i + want.length <= lines.length; i++) {
    if (want.every((w, k) => lines[i + k] === w)) {
      if (best === null || Math.abs(i + 1 - c.start) < Math.abs(best + 1 - c.start)) best = i;
    }
  }
  return best === null ? null : { start: best + 1, end: best + want.length };
}
