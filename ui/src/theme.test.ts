/// <reference types="vite/client" />
import { describe, expect, it } from "vitest";

// Colours live in app.css as custom properties, with dark values for `prefers-color-scheme`;
// components use the names only.
const components = import.meta.glob<string>(["./**/*.svelte"], { query: "?raw", import: "default", eager: true });

/** app.css as written (Vitest hands CSS imports over empty, so it is read from disk). */
async function appCss(): Promise<string> {
  const fs: { readFileSync(path: string, encoding: "utf8"): string } = await import(/* @vite-ignore */ `node:${"fs"}`);
  const here = decodeURIComponent(import.meta.url.replace(/^file:\/\//, ""));
  return fs.readFileSync(here.replace(/[^/]*$/, "app.css"), "utf8");
}

const COLOUR = /#[0-9a-f]{3,8}\b|\b(?:rgb|hsl)a?\(|(?<![-\w])(?:white|black)(?![-\w])/i;

function tokens(block: string): string[] {
  return [...block.matchAll(/(--[\w-]+)\s*:/g)].map((m) => m[1]).sort();
}

describe("theme", () => {
  it("components name colours only through tokens", () => {
    expect(Object.keys(components).length).toBeGreaterThan(10);
    const found = Object.entries(components).flatMap(([file, text]) => [...text.matchAll(new RegExp(COLOUR, "gi"))].map((m) => `${file}: ${m[0]}`));
    expect(found).toEqual([]);
  });

  it("app.css sets colours only in token definitions, and dark mode overrides every colour token", async () => {
    const css = await appCss();
    const dark = css.slice(css.indexOf("@media (prefers-color-scheme: dark)"));
    const light = css.slice(0, css.indexOf("@media (prefers-color-scheme: dark)"));
    expect(dark.length).toBeGreaterThan(100);
    const stray = css.split("\n").filter((l) => COLOUR.test(l) && !/^\s*--[\w-]+\s*:/.test(l));
    expect(stray).toEqual([]);
    const colourTokens = tokens(light.split("\n").filter((l) => /^\s*--[\w-]+\s*:.*(#|rgba?\()/.test(l)).join("\n"));
    expect(colourTokens.length).toBeGreaterThan(20);
    expect(tokens(dark)).toEqual(colourTokens);
  });
});
