// Inline Markdown in one-line texts written by the model (plan titles): code spans, strong,
// emphasis and strikethrough as a tree of nodes. Components render the nodes as elements and
// their text as text, so nothing in the input can become markup: no HTML string is built.

export type Inline =
  | { kind: "text"; text: string }
  | { kind: "code"; text: string }
  | { kind: "strong" | "em" | "del"; children: Inline[] };

type Delimiter = "**" | "__" | "~~" | "*" | "_";
const KIND: Record<Delimiter, "strong" | "em" | "del"> = { "**": "strong", __: "strong", "~~": "del", "*": "em", _: "em" };
const PUNCTUATION = /[!-/:-@[-`{-~]/;
const WORD = /[\p{L}\p{N}]/u;
const SPACE = /\s/;

/** The inline Markdown of `src` as nodes; what is not markup stays text, word for word. */
export function parseInline(src: string): Inline[] {
  return parse(src, 0, src.length, new Map());
}

/** Closers already looked for in this text, by delimiter and span: each is looked for once,
 *  so delimiters that never close cost a scan each, not a scan per way of nesting them. */
type Memo = Map<string, number>;

function parse(s: string, from: number, to: number, memo: Memo): Inline[] {
  const out: Inline[] = [];
  let text = "";
  const push = (n: Inline) => {
    if (text) out.push({ kind: "text", text });
    text = "";
    out.push(n);
  };
  let i = from;
  while (i < to) {
    const c = s[i];
    if (c === "\\" && i + 1 < to && PUNCTUATION.test(s[i + 1])) {
      text += s[i + 1];
      i += 2;
      continue;
    }
    if (c === "`") {
      const n = run(s, i, to);
      const close = closingRun(s, i + n, to, n);
      if (close < 0) {
        text += s.slice(i, i + n);
        i += n;
        continue;
      }
      push({ kind: "code", text: codeText(s.slice(i + n, close)) });
      i = close + n;
      continue;
    }
    if (c === "[") {
      const link = linkAt(s, i, to);
      if (link) {
        // The label stays (a title is no place for a link); the address goes.
        for (const n of parse(s, i + 1, link.labelEnd, memo)) {
          if (n.kind === "text") text += n.text;
          else push(n);
        }
        i = link.end;
        continue;
      }
    }
    const d = delimiterAt(s, i);
    if (d && opens(s, i, d)) {
      const close = closer(s, i + d.length, to, d, memo);
      if (close >= 0) {
        push({ kind: KIND[d], children: parse(s, i + d.length, close, memo) });
        i = close + d.length;
        continue;
      }
    }
    text += c;
    i++;
  }
  if (text) out.push({ kind: "text", text });
  return out;
}

/** How many backticks start at `i`. */
function run(s: string, i: number, to: number): number {
  let n = 0;
  while (i + n < to && s[i + n] === "`") n++;
  return n;
}

/** Where a run of exactly `n` backticks starts after `from`, or -1. */
function closingRun(s: string, from: number, to: number, n: number): number {
  let i = from;
  while (i < to) {
    if (s[i] !== "`") {
      i++;
      continue;
    }
    const m = run(s, i, to);
    if (m === n) return i;
    i += m;
  }
  return -1;
}

/** A code span's text: line ends as spaces, one space stripped from each side of padding. */
function codeText(raw: string): string {
  const t = raw.replace(/\r?\n/g, " ");
  return t.length >= 2 && t.startsWith(" ") && t.endsWith(" ") && t.trim() !== "" ? t.slice(1, -1) : t;
}

/** `[label](address)` at `i`: where the label ends and the whole link ends. */
function linkAt(s: string, i: number, to: number): { labelEnd: number; end: number } | null {
  const labelEnd = s.indexOf("]", i + 1);
  if (labelEnd < 0 || labelEnd >= to || labelEnd === i + 1 || s[labelEnd + 1] !== "(") return null;
  // Parentheses in the address come in pairs (`javascript:alert(1)`).
  let depth = 0;
  for (let i2 = labelEnd + 2; i2 < to; i2++) {
    if (s[i2] === "(") depth++;
    else if (s[i2] === ")" && depth-- === 0) return { labelEnd, end: i2 + 1 };
  }
  return null;
}

function delimiterAt(s: string, i: number): Delimiter | null {
  for (const d of ["**", "__", "~~", "*", "_"] as const) if (s.startsWith(d, i)) return d;
  return null;
}

/** A delimiter opens when text follows it at once; `_` not inside a word (`snake_case`). */
function opens(s: string, i: number, d: Delimiter): boolean {
  const next = s[i + d.length];
  if (next === undefined || SPACE.test(next)) return false;
  return !d.startsWith("_") || i === 0 || !WORD.test(s[i - 1]);
}

/** A delimiter closes when text comes right before it; `_` not inside a word. */
function closes(s: string, i: number, d: Delimiter): boolean {
  const prev = s[i - 1];
  if (prev === undefined || SPACE.test(prev)) return false;
  const next = s[i + d.length];
  return !d.startsWith("_") || next === undefined || !WORD.test(next);
}

/** Where the delimiter that closes `d` (opened before `from`) starts, or -1. Code spans and
 *  complete inner spans are stepped over, so `*a **b** c*` closes at the last `*`. */
function closer(s: string, from: number, to: number, d: Delimiter, memo: Memo): number {
  const key = `${d}:${from}:${to}`;
  const known = memo.get(key);
  if (known !== undefined) return known;
  const found = scanForCloser(s, from, to, d, memo);
  memo.set(key, found);
  return found;
}

function scanForCloser(s: string, from: number, to: number, d: Delimiter, memo: Memo): number {
  let i = from;
  while (i < to) {
    const c = s[i];
    if (c === "\\" && i + 1 < to) {
      i += 2;
      continue;
    }
    if (c === "`") {
      const n = run(s, i, to);
      const close = closingRun(s, i + n, to, n);
      i = close < 0 ? i + n : close + n;
      continue;
    }
    const here = delimiterAt(s, i);
    if (here === d && i > from && closes(s, i, d)) return i;
    if (here && here !== d && opens(s, i, here)) {
      const inner = closer(s, i + here.length, to, here, memo);
      if (inner >= 0) {
        i = inner + here.length;
        continue;
      }
    }
    i += here?.length ?? 1;
  }
  return -1;
}
