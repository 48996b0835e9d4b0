// The Settings' "Tool servers" (MCP) as plain functions: the add form's fields read into
// what the app takes, and a server's state and tools in words.
import type { McpServer, McpServerState, McpTool } from "./types";

/** A command line split into words at blanks; "double quotes" keep blanks inside a word
 *  (`""` is an empty word). Nothing else is special. */
export function splitCommand(line: string): { words: string[] } | { error: string } {
  const words: string[] = [];
  let word = "";
  let started = false;
  let quoted = false;
  for (const c of line) {
    if (c === '"') {
      quoted = !quoted;
      started = true;
    } else if (!quoted && /\s/.test(c)) {
      if (started) words.push(word);
      word = "";
      started = false;
    } else {
      word += c;
      started = true;
    }
  }
  if (quoted) return { error: "a double quote in the command line is not closed" };
  if (started) words.push(word);
  return { words };
}

/** The non-blank lines of a text field, each without its surrounding blanks. */
export function lines(text: string): string[] {
  return text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "");
}

/** How the state pill looks (a badge tone of app.css), for every state the app reports. */
export const STATE_TONE = {
  starting: "warn",
  ready: "good",
  failed: "bad",
  disabled: "off",
} satisfies Record<McpServerState, string>;

/** "1 tool", "12 tools". */
export function toolCount(n: number): string {
  return `${n} tool${n === 1 ? "" : "s"}`;
}

/** Whether the tool is read-only by the server's own mark (`readOnlyHint`), which the user
 *  cannot take away; else it is read-only only when the user vouches for it. */
export function readOnlyByServer(tool: McpTool): boolean {
  return tool.read_only && !tool.vouched;
}

/** Whether any server is still starting (the list is then read again sooner). */
export function anyStarting(servers: McpServer[]): boolean {
  return servers.some((s) => s.state === "starting");
}
