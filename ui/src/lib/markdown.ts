// Agent messages as HTML, rendered by the app with the renderer plans use (pulldown-cmark,
// then ammonia's allowlist: model-written HTML stays inert). Messages asked for in the same
// moment go in one call; what was rendered is kept (the newest few hundred texts), so
// scrolling back never asks twice.
import { commands } from "../bindings";

/** How many rendered texts are kept. */
export const KEPT = 400;
/** How much the kept texts and their HTML may take, in characters. */
export const KEPT_BYTES = 8 * 1024 * 1024;
/** The most texts one call takes (the app refuses more). */
const BATCH = 64;

export type Rendered = string | null;
type Waiting = { text: string; done: (html: Rendered) => void };

export type Renderer = {
  /** The HTML of `text` if it is rendered already (null: show it as plain text). */
  peek(text: string): Rendered | undefined;
  /** The HTML of `text`, rendered with others asked for in the same moment. */
  render(text: string): Promise<Rendered>;
};

/** A renderer calling `call` with each batch; a failed call shows its texts as plain text. */
export function createRenderer(call: (texts: string[]) => Promise<Rendered[]>): Renderer {
  const kept = new Map<string, Rendered>();
  const asked = new Map<string, Promise<Rendered>>();
  let queue: Waiting[] = [];

  let bytes = 0;
  const size = (text: string, html: Rendered) => text.length + (html?.length ?? 0);
  function keep(text: string, html: Rendered) {
    const old = kept.get(text);
    if (old !== undefined) {
      bytes -= size(text, old);
      kept.delete(text);
    }
    kept.set(text, html);
    bytes += size(text, html);
    // At most KEPT texts and KEPT_BYTES in all: the oldest go first.
    while (kept.size > KEPT || (bytes > KEPT_BYTES && kept.size > 1)) {
      const first = kept.keys().next().value as string;
      bytes -= size(first, kept.get(first) ?? null);
      kept.delete(first);
    }
  }

  async function flush() {
    const batch = queue;
    queue = [];
    for (let i = 0; i < batch.length; i += BATCH) {
      const part = batch.slice(i, i + BATCH);
      let out: Rendered[];
      try {
        out = await call(part.map((w) => w.text));
      } catch {
        out = [];
      }
      part.forEach((w, k) => {
        const html = out[k] ?? null;
        keep(w.text, html);
        asked.delete(w.text);
        w.done(html);
      });
    }
  }

  return {
    peek(text) {
      const html = kept.get(text);
      if (html !== undefined) keep(text, html);
      return html;
    },
    render(text) {
      const known = kept.get(text);
      if (known !== undefined) return Promise.resolve(known);
      const pending = asked.get(text);
      if (pending) return pending;
      const p = new Promise<Rendered>((done) => {
        if (!queue.length) queueMicrotask(flush);
        queue.push({ text, done });
      });
      asked.set(text, p);
      return p;
    },
  };
}

/** The app's renderer. */
export const markdown = createRenderer(async (texts) => {
  const r = await commands.renderMarkdown(texts);
  if (r.status === "error") throw new Error(r.error.message);
  return r.data;
});
