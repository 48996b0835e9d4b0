// Line comments on a plan revision (PM-25): the plan cut into the blocks it renders as (each
// takes a comment, sent as the source lines it came from), ranges, the quoted passage, and
// finding a passage again in another text. Drafts not sent yet are kept with the window's
// state (uistate.ts).

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

/** What a block of the plan is, as it renders. */
export type BlockKind = "heading" | "paragraph" | "item" | "code" | "quote" | "table" | "rule";

/** One block of the plan as it renders (a heading, a paragraph, one list item, a code block, a
 *  quote, a table), with the source lines it comes from (1-based, inclusive) and the Markdown
 *  that renders it alone. */
export type Block = Range & { kind: BlockKind; text: string };

const FENCE = /^( *)(`{3,}|~{3,})/;
const ITEM = /^( *)([-*+]|\d{1,9}[.)])( +|$)/;
const HEADING = /^ {0,3}#{1,6}(?:\s|$)/;
const RULE = /^ {0,3}([-*_])(?: *\1){2,} *$/;
const SETEXT = /^ {0,3}(?:=+|-+) *$/;
const DELIMITER_ROW = /^ *\|? *:?-+:? *(?:\| *:?-+:? *)*\|? *$/;

/** Leading spaces, a tab counted as four. */
const indentOf = (line: string) => (line.match(/^[ \t]*/)?.[0] ?? "").replace(/\t/g, "    ").length;

/**
 * The blocks `lines` renders as, in order; blank lines belong to none (except inside a code
 * block or between the paragraphs of one list item). Close enough to CommonMark for plans:
 * each block is rendered alone, and a comment on it names its source lines.
 */
export function blocksOf(lines: string[]): Block[] {
  const out: Block[] = [];
  type Open = { kind: BlockKind; start: number; end: number; content: number };
  let cur: Open | null = null;
  /** An open fence: its character and length (a fence closes with at least as many). */
  let fence: { char: string; len: number } | null = null;
  let blankInItem = false;

  const close = () => {
    if (cur) {
      const src = lines.slice(cur.start - 1, cur.end);
      // A nested item rendered alone: as the item it is, not as indented code.
      const cut = cur.kind === "item" ? indentOf(src[0]) : 0;
      const text = (cut ? src.map((l) => l.replace(new RegExp(`^ {0,${cut}}`), "")) : src).join("\n");
      out.push({ kind: cur.kind, start: cur.start, end: cur.end, text });
    }
    cur = null;
    blankInItem = false;
  };
  const opens = (line: string) => {
    const m = line.match(FENCE);
    return m ? { char: m[2][0], len: m[2].length } : null;
  };

  lines.forEach((line, i) => {
    const n = i + 1;
    if (fence && cur) {
      cur.end = n;
      const m = line.match(/^ *(`{3,}|~{3,}) *$/);
      if (m && m[1][0] === fence.char && m[1].length >= fence.len) fence = null;
      return;
    }
    if (line.trim() === "") {
      // A list item may go on after a blank line (its next paragraph, indented).
      if (cur?.kind === "item") blankInItem = true;
      else close();
      return;
    }
    const indent = indentOf(line);
    const item = line.match(ITEM);
    if (cur?.kind === "item" && blankInItem) {
      if (indent >= cur.content && !item) {
        cur.end = n;
        blankInItem = false;
        fence = opens(line);
        return;
      }
      close();
    }
    const open = opens(line);
    // Inside a list item, its own code block stays part of it.
    if (open && cur?.kind === "item" && indent >= cur.content) {
      cur.end = n;
      fence = open;
      return;
    }
    if (open && indent <= 3) {
      close();
      cur = { kind: "code", start: n, end: n, content: 0 };
      fence = open;
      return;
    }
    if (HEADING.test(line)) {
      close();
      out.push({ kind: "heading", start: n, end: n, text: line });
      return;
    }
    if (cur?.kind === "paragraph" && SETEXT.test(line)) {
      cur.kind = "heading";
      cur.end = n;
      close();
      return;
    }
    if (RULE.test(line)) {
      close();
      out.push({ kind: "rule", start: n, end: n, text: line });
      return;
    }
    if (item) {
      close();
      cur = { kind: "item", start: n, end: n, content: item[1].length + item[2].length + Math.max(1, item[3].length) };
      return;
    }
    if (/^ {0,3}>/.test(line)) {
      if (cur?.kind !== "quote") {
        close();
        cur = { kind: "quote", start: n, end: n, content: 0 };
      } else cur.end = n;
      return;
    }
    if (cur?.kind === "code") {
      // Indented code goes on while indented.
      if (indent >= 4) {
        cur.end = n;
        return;
      }
      close();
    }
    if (cur) {
      // A table: a paragraph whose second line is the row of dashes.
      if (cur.kind === "paragraph" && n === cur.start + 1 && line.includes("|") && DELIMITER_ROW.test(line)) cur.kind = "table";
      cur.end = n;
      return;
    }
    cur = { kind: indent >= 4 ? "code" : "paragraph", start: n, end: n, content: 0 };
  });
  close();
  return out;
}

/** The range from one block to another, whichever comes first. */
export function spanOf(a: Range, b: Range): Range {
  return { start: Math.min(a.start, b.start), end: Math.max(a.end, b.end) };
}

/** Whether two ranges share a line. */
export const overlaps = (a: Range, b: Range) => a.start <= b.end && b.start <= a.end;

/** How much of a passage its label quotes. */
const QUOTED = 48;

/** A commented passage named by its words, the way it reads rendered: its first line that
 *  says something, without the Markdown that marks it as a heading, item or quote. */
export function passageLabel(quote: string): string {
  // A code block's fence says nothing; its first line of code does.
  const said = quote.split("\n").filter((l) => !FENCE.test(l.trimStart()));
  const line = said.find((l) => /[\p{L}\p{N}]/u.test(l)) ?? said.find((l) => l.trim() !== "") ?? "";
  const words = line
    .trim()
    .replace(/^(?:>\s*)+/, "")
    .replace(/^#{1,6}\s+/, "")
    .replace(/^(?:[-*+]|\d{1,9}[.)])\s+(?:\[[ xX]\]\s+)?/, "")
    .replace(/^\|\s*|\s*\|$/g, "")
    .trim();
  return `“${words.length > QUOTED ? `${words.slice(0, QUOTED - 1).trimEnd()}…` : words}”`;
}
