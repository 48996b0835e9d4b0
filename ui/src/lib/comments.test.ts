import { describe, expect, it } from "vitest";
import { anchor, linesOf, quoteOf, rangeOf } from "./comments";

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
