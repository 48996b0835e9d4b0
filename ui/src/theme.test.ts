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

/** The custom properties a piece of app.css defines, by name. */
function definitions(css: string): Map<string, string> {
  return new Map([...css.matchAll(/(--[\w-]+)\s*:\s*([^;]+);/g)].map((m) => [m[1], m[2].trim()]));
}

/** WCAG 2 relative luminance of a `#rgb` or `#rrggbb` colour. */
function luminance(hex: string): number {
  const digits = /^#([0-9a-f]{3}|[0-9a-f]{6})$/i.exec(hex)?.[1];
  if (!digits) throw new Error(`not a #rgb or #rrggbb colour: ${hex}`);
  const full = digits.length === 3 ? [...digits].map((d) => d + d).join("") : digits;
  const [r, g, b] = [0, 2, 4].map((i) => {
    const c = parseInt(full.slice(i, i + 2), 16) / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/** WCAG 2 contrast ratio of two colours (1 to 21). */
function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

/** Each text/background pair below 4.5:1 (WCAG AA for normal text), in each scheme. */
function belowAA(css: string, pairs: [string, string][]): string[] {
  const split = css.indexOf("@media (prefers-color-scheme: dark)");
  const schemes = { light: definitions(css.slice(0, split)), dark: definitions(css.slice(split)) };
  return Object.entries(schemes).flatMap(([scheme, tokens]) =>
    pairs.flatMap(([text, background]) => {
      const [fg, bg] = [tokens.get(text), tokens.get(background)];
      if (!fg || !bg) return [`${scheme}: ${text} or ${background} undefined`];
      const ratio = contrast(fg, bg);
      return ratio < 4.5 ? [`${scheme}: ${text} ${fg} on ${background} ${bg} is ${ratio.toFixed(2)}:1`] : [];
    }),
  );
}

describe("contrast", () => {
  it("every colour of highlighted code is readable on the code block, light and dark", async () => {
    const css = await appCss();
    // The colours of the highlight.js rules (`--bad` for a diff block's deletions among them),
    // and every `--hl-` token besides, in case a rule stops naming one.
    const rules = [...css.matchAll(/([^{}]*\.hljs-[^{}]*)\{([^}]*)\}/g)].map((m) => m[2]);
    const used = rules.flatMap((body) => [...body.matchAll(/(?<![-\w])color:\s*var\((--[\w-]+)\)/g)].map((m) => m[1]));
    const colours = [...new Set([...used, ...tokens(css).filter((t) => t.startsWith("--hl-"))])];
    expect(colours).toEqual(expect.arrayContaining(["--hl-keyword", "--hl-string", "--hl-title", "--bad"]));
    // A block's code has no background of its own (`.md pre code`): the `pre`'s shows.
    const background = /\.md pre\s*\{[^}]*background:\s*var\((--[\w-]+)\)/.exec(css)?.[1];
    expect(background).toBe("--code-bg");
    expect(belowAA(css, colours.map((c) => [c, background ?? ""]))).toEqual([]);
  });

  it("a diff's lines are readable on their backgrounds, light and dark", async () => {
    // Diff.svelte draws plain text (never highlighted): each rule that sets a background,
    // with the colour it sets, else the page's text colour.
    const diff = components["./components/Diff.svelte"];
    const pairs = [...diff.matchAll(/\{([^}]*)\}/g)].flatMap(([, body]): [string, string][] => {
      const background = /background:\s*var\((--[\w-]+)\)/.exec(body)?.[1];
      const colour = /(?<![-\w])color:\s*var\((--[\w-]+)\)/.exec(body)?.[1] ?? "--text";
      return background ? [[colour, background]] : [];
    });
    expect(pairs).toEqual(expect.arrayContaining([["--text", "--diff-add"], ["--text", "--diff-del"]]));
    expect(belowAA(await appCss(), pairs)).toEqual([]);
  });
});
