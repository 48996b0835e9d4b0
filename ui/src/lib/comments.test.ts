import { describe, expect, it } from "vitest";
import { anchor, blocksOf, linesOf, passageLabel, quoteOf, rangeOf, spanOf } from "./comments";

const v1 = ["## Summary", "Add a retry.", "", "## Steps", "1. Wrap the call", "2. Add a test", "3. Docs"];

describe("comment anchoring", () => {
  it("numbers lines as the runtime does: a final newline starts no line", () => {
    expect(linesOf("a\nb\n")).toEqual(["a", "b"]);
    expect(linesOf("a\r\n\nb")).toEqual(["a", "", "b"]);
    expect(linesOf("")).toEqual([""]);
  });

  it("quotes the lines of a range picked in either order", () => {
    expect(rangeOf(6, 5)).toEqual({ start: 5, end: 6 });
    expect(quoteOf(v1, { start: 5, end: 6 })).toBe("1. Wrap the call\n2. Add a test");
  });

  it("keeps a comment on a passage that moves but does not change attached", () => {
    const c = { start: 6, end: 6, quote: "2. Add a test" };
    const v2 = ["## Summary", "Add a retry.", "", "It backs off.", "", "## Steps", "1. Wrap the call with backoff", "2. Add a test"];
    expect(anchor(c, v2)).toEqual({ start: 8, end: 8 });
  });

  it("lets go of a passage that changed or went", () => {
    const v2 = ["## Summary", "Add a retry.", "", "## Steps", "1. Wrap the call with backoff", "2. Add a test"];
    expect(anchor({ start: 5, end: 5, quote: "1. Wrap the call" }, v2)).toBeNull();
    expect(anchor({ start: 7, end: 7, quote: "3. Docs" }, v2)).toBeNull();
    // Two lines must stay together to count as the same passage.
    expect(anchor({ start: 5, end: 6, quote: "1. Wrap the call\n2. Add a test" }, v2)).toBeNull();
  });

  it("picks the copy nearest to where the passage was", () => {
    const twice = ["x", "same", "y", "z", "w", "same"];
    expect(anchor({ start: 5, end: 5, quote: "same" }, twice)).toEqual({ start: 6, end: 6 });
    expect(anchor({ start: 1, end: 1, quote: "same" }, twice)).toEqual({ start: 2, end: 2 });
  });
});

describe("the plan's blocks, as it renders", () => {
  const at = (text: string) => blocksOf(linesOf(text)).map((b) => [b.kind, b.start, b.end]);

  it("makes each heading, paragraph and list item one block, on the lines it comes from", () => {
    const plan = "## Summary\nGive `greet.sh` a test\nand a louder greeting.\n\n## Steps\n1. Add the test.\n2. Change the echo\n   so it ends with `!`.\n3. Run the test.\n";
    expect(at(plan)).toEqual([
      ["heading", 1, 1],
      ["paragraph", 2, 3],
      ["heading", 5, 5],
      ["item", 6, 6],
      ["item", 7, 8],
      ["item", 9, 9],
    ]);
    const blocks = blocksOf(linesOf(plan));
    expect(blocks[4].text).toBe("2. Change the echo\n   so it ends with `!`.");
  });

  it("keeps a fenced code block whole, blank lines and Markdown-looking lines in it too", () => {
    const plan = "Run:\n\n```sh\n# not a heading\n\n- not an item\n```\nAfter.";
    expect(at(plan)).toEqual([
      ["paragraph", 1, 1],
      ["code", 3, 7],
      ["paragraph", 8, 8],
    ]);
  });

  it("keeps a list item's later paragraphs and code with it, and renders a nested item as an item", () => {
    const plan = "- Wrap the call\n\n  with a backoff.\n  ```\n  retry(3)\n  ```\n    - nested step\n- Next";
    expect(at(plan)).toEqual([
      ["item", 1, 6],
      ["item", 7, 7],
      ["item", 8, 8],
    ]);
    expect(blocksOf(linesOf(plan))[1].text).toBe("- nested step");
  });

  it("knows tables, quotes, rules and underlined headings", () => {
    const plan = "| Risk | Mitigation |\n| --- | --- |\n| a | b |\n\n> Note\ngoes on\n\n---\n\nTitle\n=====";
    expect(at(plan)).toEqual([
      ["table", 1, 3],
      ["quote", 5, 6],
      ["rule", 8, 8],
      ["heading", 10, 11],
    ]);
  });

  it("spans blocks picked in either order, and names a passage by its words", () => {
    expect(spanOf({ start: 7, end: 8 }, { start: 2, end: 3 })).toEqual({ start: 2, end: 8 });
    expect(passageLabel("3. Run the test.")).toBe("“Run the test.”");
    expect(passageLabel("## Steps")).toBe("“Steps”");
    expect(passageLabel("- [x] Read the script")).toBe("“Read the script”");
    expect(passageLabel("```sh\nnpm test\n```")).toBe("“npm test”");
    expect(passageLabel("A very long paragraph that goes on and on past what a label should quote.")).toBe("“A very long paragraph that goes on and on past…”");
  });
});
