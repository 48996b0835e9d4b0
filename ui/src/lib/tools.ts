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

/** A piece of a tool row's headline: words, or what the call was about (a path, or code
 *  such as a command or a pattern), which the row sets apart in a monospace font. */
export type HeadlinePart = { kind: "words" | "path" | "code"; text: string };

/** The call's arguments as an object (the model may send anything). */
function argsOf(t: Pick<ToolItem, "args">): Record<string, unknown> {
  return t.args && typeof t.args === "object" && !Array.isArray(t.args) ? (t.args as Record<string, unknown>) : {};
}

/** `text` on one line and at most `max` characters, with an ellipsis where it was cut. */
export function clip(text: string, max: number): string {
  const lines = text.trim().split("\n");
  const first = lines[0].trimEnd();
  if (first.length > max) return `${first.slice(0, max - 1).trimEnd()}…`;
  return lines.length > 1 ? `${first} …` : first;
}

const COMMAND_CHARS = 80;
const PATTERN_CHARS = 60;
const MESSAGE_CHARS = 100;

/** The files a unified diff names (`+++ b/x`, or `--- a/x` when the file goes), in order. */
function patchFiles(patch: string): string[] {
  const files: string[] = [];
  const lines = patch.split("\n");
  lines.forEach((line, i) => {
    if (!line.startsWith("--- ") || !lines[i + 1]?.startsWith("+++ ")) return;
    const strip = (p: string) => p.trim().replace(/^[ab]\//, "");
    const neu = strip(lines[i + 1].slice(4));
    files.push(neu === "/dev/null" ? strip(line.slice(4)) : neu);
  });
  return files;
}

/** Up to three names and how many more there are. */
function listed(names: string[]): string {
  if (names.length <= 3) return names.join(", ");
  return `${names.slice(0, 3).join(", ")} and ${names.length - 3} more`;
}

/** What a tool call did (or, while it runs, is doing), in words, with the paths under the
 *  workspace relative to it. The tool's own name stays out of it (the fold shows it), but
 *  for a tool the app does not know, whose name is all there is to say. */
export function headline(t: Pick<ToolItem, "name" | "args" | "changes" | "status" | "output">, workspace: string | null): HeadlinePart[] {
  const a = argsOf(t);
  const running = t.status === "running";
  const w = (text: string): HeadlinePart => ({ kind: "words", text });
  const p = (text: string): HeadlinePart => ({ kind: "path", text });
  const c = (text: string): HeadlinePart => ({ kind: "code", text });
  /** The verb as done or as going on, then the rest; a running call's line ends in `…`
   *  (one: a cut command already ends in one). */
  const said = (done: string, doing: string, ...rest: HeadlinePart[]): HeadlinePart[] => {
    const parts = [w(running ? doing : done), ...rest];
    return running && !parts[parts.length - 1].text.endsWith("…") ? [...parts, w("…")] : parts;
  };
  const path = str(a.path) ?? str(a.file_path);
  const where = path !== null ? relative(path, workspace) : null;
  const within = (): HeadlinePart[] => (where !== null && where !== "." ? [w(" in "), p(where)] : []);
  const file = where === null ? w("a file") : p(where);

  const mcp = mcpName(t.name);
  if (mcp) return said("Called ", "Calling ", c(mcp.tool), w(` on ${mcp.server}`));
  switch (t.name) {
    case "read_file":
      return said("Read ", "Reading ", file);
    case "list_dir":
      return where === null || where === "." ? said("Listed the workspace", "Listing the workspace") : said("Listed ", "Listing ", p(where.endsWith("/") ? where : `${where}/`));
    case "glob":
      return said("Found files matching ", "Finding files matching ", c(clip(str(a.pattern) ?? "", PATTERN_CHARS)), ...within());
    case "grep":
      return said("Searched for ", "Searching for ", c(clip(str(a.pattern) ?? "", PATTERN_CHARS)), ...within());
    case "write":
      return said("Wrote ", "Writing ", file);
    case "edit":
      return said("Edited ", "Editing ", file);
    case "multiedit": {
      const n = Array.isArray(a.edits) ? a.edits.length : 0;
      return said("Edited ", "Editing ", file, ...(n > 1 ? [w(` in ${n} places`)] : []));
    }
    case "append":
      return said("Appended to ", "Appending to ", file);
    case "apply_patch": {
      const files = t.changes.length ? t.changes.map((ch) => relative(ch.path, workspace)) : patchFiles(str(a.patch) ?? "");
      return files.length ? said("Patched ", "Patching ", p(listed(files))) : said("Applied a patch", "Applying a patch");
    }
    case "bash": {
      const command = clip(str(a.command) ?? "", COMMAND_CHARS);
      return command ? said("Ran ", "Running ", c(command)) : said("Ran an empty command", "Running an empty command");
    }
    case "create_goal":
      return said("Set the goal", "Setting the goal");
    case "get_goal":
      return said("Checked the goal", "Checking the goal");
    case "update_goal": {
      if (a.mode === "token_budget") {
        const budget = typeof a.token_budget === "number" ? a.token_budget.toLocaleString("en-US") : "?";
        return said(`Set the goal's token budget to ${budget}`, `Setting the goal's token budget to ${budget}`);
      }
      if (a.status === "complete") return said("Marked the goal complete", "Marking the goal complete");
      if (a.status === "blocked") {
        // The agent's question to the user, said as one: never a refusal.
        const message = clip(str(a.message) ?? "", MESSAGE_CHARS);
        return said(message ? `Asked you for help: ${message}` : "Asked you for help", "Asking you for help");
      }
      return said("Updated the goal", "Updating the goal");
    }
    case "EnterPlanMode":
      return said("Asked you whether to plan first", "Asking you whether to plan first");
    case "ExitPlanMode":
      // In auto permission mode the plan goes to work unreviewed, and the result says so.
      if (t.output.includes("WITHOUT review")) return [w("Submitted the plan, which auto mode starts without review")];
      return said("Submitted the plan for review", "Submitting the plan for review");
    case "tool_search":
      return said("Looked for tools matching ", "Looking for tools matching ", c(clip(str(a.query) ?? "", PATTERN_CHARS)));
    case "list_mcp_resources": {
      const server = str(a.server);
      return server ? said(`Listed the resources of ${server}`, `Listing the resources of ${server}`) : said("Listed the tool servers' resources", "Listing the tool servers' resources");
    }
    case "read_mcp_resource":
      return said("Read ", "Reading ", c(clip(str(a.uri) ?? "", COMMAND_CHARS)), w(` from ${str(a.server) ?? "a tool server"}`));
  }
  // A tool the app does not know (an extension's): its name, and its first text argument.
  const first = Object.values(a).find((v): v is string => typeof v === "string");
  return said("Used ", "Using ", c(t.name), ...(first ? [w(": "), c(clip(first, PATTERN_CHARS))] : []));
}

/** The headline as plain text, code in backticks: "Ran `cargo test`". */
export function headlineText(parts: HeadlinePart[]): string {
  return parts.map((part) => (part.kind === "code" ? `\`${part.text}\`` : part.text)).join("");
}

/** Whether a failed call's result says the user stopped it (the shell's, an abandoned
 *  tool's, an MCP server's, or a call the stopped turn never ran). */
export function stoppedByUser(output: string): boolean {
  const last = output.trimEnd().split("\n").at(-1) ?? "";
  return (
    /^\[stopped by the user[;\]]/.test(last) ||
    output.startsWith("not run: the user stopped the turn") ||
    /^MCP server `[^`]*`: stopped( by the user|$|;)/.test(output)
  );
}

/** How a call ended, as its row says it beside the headline, and whether that is bad news
 *  (shown in red). A running call says nothing here (its headline says it), nor does the
 *  agent's proposal about its goal, which the goal's own line settles. A call the user
 *  stopped, or one the turn ended before it ran, is not a failure of the tool. */
export function outcome(t: Pick<ToolItem, "name" | "args" | "status" | "output">): { label: string | null; bad: boolean } {
  if (t.status === "running") return { label: null, bad: false };
  const a = argsOf(t);
  if (t.name === "update_goal" && a.mode === "status" && (a.status === "blocked" || a.status === "complete")) {
    // A question to the user (or the claim of being done) never reads as refused.
    if (t.status === "ok") return { label: null, bad: false };
    if (t.status === "denied") return { label: "not sent", bad: false };
  }
  if (t.status !== "ok" && stoppedByUser(t.output)) return { label: "stopped", bad: false };
  if (t.status === "error" && t.output.startsWith("not run:")) return { label: "not run", bad: false };
  if (t.name === "bash") {
    const { code } = shellResult(t.output);
    if (code !== null) return { label: `exit ${code}`, bad: code !== 0 };
    const last = t.output.trimEnd().split("\n").at(-1) ?? "";
    if (last.startsWith("[timed out")) return { label: "timed out", bad: true };
    if (last.startsWith("[killed by a signal")) return { label: "killed", bad: true };
  }
  switch (t.status) {
    case "ok":
      return { label: "ok", bad: false };
    case "denied":
      return { label: "denied", bad: true };
    case "error":
      return { label: "error", bad: true };
  }
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
