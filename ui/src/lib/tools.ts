// How a tool call reads in the transcript: what it was asked (the command, the path under
// the workspace, the pattern) and how it ended (a shell command's exit code).
import type { ToolItem } from "./session";
import type { ToolImage } from "./types";

/** `path` relative to `workspace` when it lies under it; a session's own file (the plan)
 *  by its name in the session's folder; as given otherwise. */
export function relative(path: string, workspace: string | null): string {
  const own = path.match(/\/sessions\/[^/]+\/artifacts\/([^/].*)$/);
  if (own) return own[1];
  if (!workspace) return path;
  const ws = workspace.endsWith("/") ? workspace : `${workspace}/`;
  if (path === workspace) return ".";
  return path.startsWith(ws) ? path.slice(ws.length) : path;
}

const str = (v: unknown) => (typeof v === "string" ? v : null);

/** The tools that change files, whose results carry diffs. */
export const FILE_TOOLS = new Set(["write", "edit", "multiedit", "append", "apply_patch"]);

/** One line saying what the call was asked to do. */
export function summary(t: Pick<ToolItem, "name" | "args" | "changes">, workspace: string | null): string {
  const a = t.args && typeof t.args === "object" && !Array.isArray(t.args) ? (t.args as Record<string, unknown>) : {};
  const path = str(a.path) ?? str(a.file_path);
  if (t.name === "bash") return (str(a.command) ?? "").split("\n")[0];
  if (t.name === "apply_patch") {
    const files = t.changes.map((c) => relative(c.path, workspace));
    return files.length ? files.join(", ") : "a patch";
  }
  const pattern = str(a.pattern) ?? str(a.query);
  if (pattern !== null) return path ? `${pattern}  in ${relative(path, workspace)}` : pattern;
  if (path !== null) return relative(path, workspace);
  for (const v of Object.values(a)) if (typeof v === "string") return v.split("\n")[0];
  return "";
}

/** A shell command's output without its closing `[exit code: N]` line, and that code. */
export function shellResult(output: string): { body: string; code: number | null } {
  const m = output.match(/\n?\[exit code: (-?\d+)\]\s*$/);
  if (!m || m.index === undefined) return { body: output, code: null };
  return { body: output.slice(0, m.index), code: Number(m[1]) };
}

/** The lines of a unified diff with what each is: a header, a hunk, added, removed, kept. */
export function diffLines(diff: string): { kind: "head" | "hunk" | "add" | "del" | "same"; text: string }[] {
  const lines = diff.endsWith("\n") ? diff.slice(0, -1).split("\n") : diff.split("\n");
  // A hunk holds as many lines as its `@@ -a,b +c,d @@` counts: inside it an added `++x`
  // or a removed `--x` is a change like any other; outside, lines are file headers.
  let old = 0;
  let neu = 0;
  return lines.map((text) => {
    if (old <= 0 && neu <= 0) {
      const m = text.match(/^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@/);
      if (m) {
        old = m[1] === undefined ? 1 : Number(m[1]);
        neu = m[2] === undefined ? 1 : Number(m[2]);
        return { kind: "hunk", text };
      }
      return { kind: "head", text };
    }
    if (text.startsWith("\\")) return { kind: "same", text };
    if (text.startsWith("+")) {
      neu--;
      return { kind: "add", text };
    }
    if (text.startsWith("-")) {
      old--;
      return { kind: "del", text };
    }
    old--;
    neu--;
    return { kind: "same", text };
  });
}

/** An MCP tool's name as the model calls it, `mcp__<server>__<tool>`, split into the server
 *  and the tool's own name (a server's name never holds `__`); null for any other tool. */
export function mcpName(name: string): { server: string; tool: string } | null {
  const m = /^mcp__(.+?)__(.+)$/s.exec(name);
  return m ? { server: m[1], tool: m[2] } : null;
}

/** The image types the transcript shows; anything else a server sends is named, not shown. */
export const IMAGE_TYPES: ReadonlySet<string> = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

/** A result's image as the page may load it (a `data:` URL of an allowed type), or why it is
 *  not shown. */
export function imageSource(img: ToolImage): { src: string } | { refused: string } {
  const mime = img.mime.trim().toLowerCase();
  if (!IMAGE_TYPES.has(mime)) return { refused: `image of type ${img.mime} not shown` };
  const data = img.data.replace(/\s+/g, "");
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(data)) return { refused: `image of type ${mime} not shown: its data is not base64` };
  return { src: `data:${mime};base64,${data}` };
}
