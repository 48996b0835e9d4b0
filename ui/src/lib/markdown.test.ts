import { describe, expect, it } from "vitest";
import { createRenderer, KEPT } from "./markdown";

describe("markdown renderer", () => {
  it("renders the texts asked for in one moment in one call, and never asks twice", async () => {
    const calls: string[][] = [];
    const r = createRenderer(async (texts) => {
      calls.push(texts);
      return texts.map((t) => `<p>${t}</p>`);
    });
    expect(r.peek("a")).toBeUndefined();
    const [a, b, a2] = await Promise.all([r.render("a"), r.render("b"), r.render("a")]);
    expect([a, b, a2]).toEqual(["<p>a</p>", "<p>b</p>", "<p>a</p>"]);
    expect(calls).toEqual([["a", "b"]]);
    expect(r.peek("b")).toBe("<p>b</p>");
    await r.render("b");
    expect(calls.length).toBe(1);
  });

  it("splits a large burst into calls the app takes, and keeps only the newest texts", async () => {
    const calls: number[] = [];
    const r = createRenderer(async (texts) => {
      calls.push(texts.length);
      return texts.map((t) => t.toUpperCase());
    });
    const texts = Array.from({ length: KEPT + 10 }, (_, i) => `t${i}`);
    await Promise.all(texts.map((t) => r.render(t)));
    expect(Math.max(...calls)).toBeLessThanOrEqual(64);
    expect(calls.reduce((a, b) => a + b, 0)).toBe(KEPT + 10);
    expect(r.peek("t0")).toBeUndefined();
    expect(r.peek(`t${KEPT + 9}`)).toBe(`T${KEPT + 9}`);
  });

  it("shows the text as it is when the app cannot render it", async () => {
    const r = createRenderer(async () => Promise.reject(new Error("gone")));
    expect(await r.render("**x**")).toBeNull();
    const short = createRenderer(async () => []);
    expect(await short.render("y")).toBeNull();
  });
});
