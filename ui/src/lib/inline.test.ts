import { describe, expect, it } from "vitest";
import { parseInline } from "./inline";

const text = (t: string) => ({ kind: "text", text: t });
const code = (t: string) => ({ kind: "code", text: t });

describe("inline Markdown", () => {
  it("turns backticks into code spans, their content as written", () => {
    expect(parseInline("Rename `greet` to `hello`")).toEqual([text("Rename "), code("greet"), text(" to "), code("hello")]);
    expect(parseInline("Quote `` a`b `` here")).toEqual([text("Quote "), code("a`b"), text(" here")]);
    expect(parseInline("Keep `**raw**` as is")).toEqual([text("Keep "), code("**raw**"), text(" as is")]);
    expect(parseInline("An `unclosed span")).toEqual([text("An `unclosed span")]);
  });

  it("reads strong, emphasis and strikethrough, nested or not", () => {
    expect(parseInline("**Fix** the *flaky* ~~old~~ test")).toEqual([
      { kind: "strong", children: [text("Fix")] },
      text(" the "),
      { kind: "em", children: [text("flaky")] },
      text(" "),
      { kind: "del", children: [text("old")] },
      text(" test"),
    ]);
    expect(parseInline("*a **b** c*")).toEqual([{ kind: "em", children: [text("a "), { kind: "strong", children: [text("b")] }, text(" c")] }]);
    expect(parseInline("**Use `tr`**")).toEqual([{ kind: "strong", children: [text("Use "), code("tr")] }]);
  });

  it("leaves what only looks like markup as text", () => {
    expect(parseInline("Rename foo_bar_baz")).toEqual([text("Rename foo_bar_baz")]);
    expect(parseInline("2 * 3 * 4")).toEqual([text("2 * 3 * 4")]);
    expect(parseInline("a ** b")).toEqual([text("a ** b")]);
    expect(parseInline("\\*not em\\*")).toEqual([text("*not em*")]);
    expect(parseInline("")).toEqual([]);
  });

  it("keeps a link's label and drops its address", () => {
    expect(parseInline("See [the `docs`](javascript:alert(1)) first")).toEqual([text("See the "), code("docs"), text(" first")]);
  });

  it("keeps HTML as text: nodes never carry markup", () => {
    expect(parseInline('<img src=x onerror="alert(1)"> *x*')).toEqual([text('<img src=x onerror="alert(1)"> '), { kind: "em", children: [text("x")] }]);
  });

  it("reads delimiters that never close once each (a hostile title cannot hang the window)", () => {
    // Without the memo this takes longer than the test runner waits (it doubles with each
    // group); it must come back, with every character as text.
    const hostile = "*a _a ~~a __a ".repeat(20);
    expect(parseInline(hostile)).toEqual([text(hostile)]);
  });
});
