// Syntax colours for code blocks, by highlight.js with the languages agents write most. It
// is loaded only when the first code block shows, so a window without code never holds it.
// highlight.js reads a block's text and writes back escaped text in spans: nothing of the
// message becomes markup.
import type { HLJSApi } from "highlight.js";

let loading: Promise<HLJSApi> | null = null;
/** The longest code block coloured, in characters. */
const MAX_CODE = 64 * 1024;

/** The languages registered, by the name a fence uses (aliases come with each). */
const LANGUAGES = {
  bash: () => import("highlight.js/lib/languages/bash"),
  c: () => import("highlight.js/lib/languages/c"),
  cpp: () => import("highlight.js/lib/languages/cpp"),
  css: () => import("highlight.js/lib/languages/css"),
  diff: () => import("highlight.js/lib/languages/diff"),
  go: () => import("highlight.js/lib/languages/go"),
  java: () => import("highlight.js/lib/languages/java"),
  javascript: () => import("highlight.js/lib/languages/javascript"),
  json: () => import("highlight.js/lib/languages/json"),
  markdown: () => import("highlight.js/lib/languages/markdown"),
  python: () => import("highlight.js/lib/languages/python"),
  rust: () => import("highlight.js/lib/languages/rust"),
  shell: () => import("highlight.js/lib/languages/shell"),
  sql: () => import("highlight.js/lib/languages/sql"),
  typescript: () => import("highlight.js/lib/languages/typescript"),
  xml: () => import("highlight.js/lib/languages/xml"),
  yaml: () => import("highlight.js/lib/languages/yaml"),
  ini: () => import("highlight.js/lib/languages/ini"),
};

function load(): Promise<HLJSApi> {
  loading ??= (async () => {
    const { default: hljs } = await import("highlight.js/lib/core");
    const langs = await Promise.all(Object.entries(LANGUAGES).map(async ([name, get]) => [name, (await get()).default] as const));
    for (const [name, lang] of langs) hljs.registerLanguage(name, lang);
    // `toml` fences read as ini, the nearest grammar.
    hljs.registerAliases(["toml"], { languageName: "ini" });
    return hljs;
  })();
  return loading;
}

/** The language a block's class names (`language-rust`), if one is registered. */
function languageOf(code: Element, hljs: HLJSApi): string | null {
  const cls = [...code.classList].find((c) => c.startsWith("language-"));
  const name = cls?.slice("language-".length) ?? "";
  return name && hljs.getLanguage(name) ? name : null;
}

/** Colours the fenced code blocks under `root` that name a known language. */
export async function highlightIn(root: HTMLElement): Promise<void> {
  const blocks = root.querySelectorAll("pre > code[class*='language-']");
  if (!blocks.length) return;
  const hljs = await load();
  for (const code of blocks) {
    if (!code.isConnected || (code as HTMLElement).dataset.highlighted) continue;
    // A huge block stays plain: colouring it would hold the page for too long.
    if ((code.textContent?.length ?? 0) > MAX_CODE) continue;
    const lang = languageOf(code, hljs);
    if (!lang) continue;
    const { value } = hljs.highlight(code.textContent ?? "", { language: lang, ignoreIllegals: true });
    code.innerHTML = value;
    code.classList.add("hljs");
    (code as HTMLElement).dataset.highlighted = "yes";
  }
}
