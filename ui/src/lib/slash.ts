// Slash commands as the window knows them: the list the composer completes and the `?` sheet
// shows, the ones the window answers itself (never sent to the session), and what a command
// the session ran said, as one line in words. The runtime's own text is written for a
// terminal (fixed-width tables, `waymark …` command lines, ids, absolute paths); the CLI
// keeps it, the window rewrites it here.
import type { Command } from "./complete";
import type { QuestionnaireKind } from "../bindings";

/** The commands the composer offers and the `?` sheet lists, in that order. */
export const SLASH_COMMANDS: Command[] = [
  { name: "/help", hint: "these commands and the keyboard shortcuts" },
  { name: "/rewind", hint: "choose a point to rewind the files and the conversation to" },
  { name: "/plan on", hint: "enter plan mode" },
  { name: "/plan off", hint: "leave plan mode" },
  { name: "/plan status", hint: "plan mode and the plan's state" },
  { name: "/plan view", hint: "show the plan" },
  // Before the bare `/goal`: Tab on `/go` takes this one, ready for the objective.
  { name: "/goal ", label: "/goal <objective>", hint: "set a goal; add tokens=50K turns=20 time=2h to limit it" },
  { name: "/goal", hint: "show the goal" },
  { name: "/goal status", hint: "show the goal and the queue" },
  { name: "/goal pause", hint: "pause the goal" },
  { name: "/goal resume", hint: "resume the goal" },
  { name: "/goal clear", hint: "remove the goal (also /goal cancel)" },
  { name: "/goal tokens=", label: "/goal tokens=…", hint: "change budgets: tokens=… turns=… time=…" },
  { name: "/goal edit ", label: "/goal edit <objective>", hint: "reword the goal" },
  { name: "/goal replace ", label: "/goal replace <objective>", hint: "drop the goal and set this one" },
  { name: "/goal next ", label: "/goal next <objective>", hint: "queue a goal to start when this one is done" },
  { name: "/compact", hint: "summarize the older conversation" },
  { name: "/instructions", hint: "which AGENTS.md files this session follows" },
  { name: "/mcp", hint: "the tool servers, in Settings" },
  { name: "/worktree", hint: "review and merge this session's worktree" },
];

/** What the window does itself for a command: the `?` sheet, the rewind list, the Goal or
 *  Plan tab, Settings on the tool servers, the worktree's review. */
export type WindowCommand = "help" | "rewind" | "goal" | "goal-draft" | "plan" | "mcp" | "worktree";

/**
 * The command the window answers itself for `text`, or null when it goes to the session.
 * `/help`, `/rewind` and `/mcp` whatever follows them; `/goal` and `/worktree` alone (with
 * words, `/goal` sets a goal); `/plan view`. Text escaped with `//` is a message, and an MCP
 * prompt (`/mcp__…`) is another name.
 */
export function windowCommand(text: string): WindowCommand | null {
  const m = text.trim().match(/^\/([^\s/]+)(?:\s+([\s\S]*))?$/);
  if (!m) return null;
  const args = (m[2] ?? "").trim();
  switch (m[1]) {
    case "help":
    case "rewind":
    case "mcp":
      return m[1];
    case "goal":
      // `/goal draft <rough words>`: the Goal tab drafts a goal for the user to edit.
      if (/^draft(\s|$)/.test(args)) return "goal-draft";
      return args === "" ? m[1] : null;
    case "worktree":
      return args === "" ? m[1] : null;
    case "plan":
      return args === "view" ? "plan" : null;
    default:
      return null;
  }
}

/** The rough words of `/goal draft <words>`. */
export function draftWords(text: string): string {
  return text.trim().replace(/^\/goal\s+draft\b/, "").trim();
}

/** An id the runtime makes (`s-…`, `cp-…`, `plan-…`): a prefix, then base-36 time and
 *  randomness (so at least one digit; a word like `plan-approval` is not one). */
const ID = String.raw`\b(?:s|cp|plan|q|goal|m|wt)-(?=[a-z0-9]*\d)[a-z0-9]{6,}\b`;

/** The last part of an absolute path, with what punctuation followed it. */
function shortPath(path: string): string {
  const [, bare, tail] = path.match(/^(.*?)([.,;:]*)$/) ?? [path, path, ""];
  return (bare.replace(/\/+$/, "").split("/").pop() ?? bare) + tail;
}

/**
 * `text` with what is written for a terminal taken out: `waymark …` command lines (and the
 * clause that offers one), the runtime's ids, sha256 hashes; absolute paths shortened to
 * their file name. Whitespace is folded, so the result is one line.
 */
export function scrubCli(text: string): string {
  let t = text
    // "(or `waymark goal reply`)", "`waymark …` or …", "… or `waymark …`"
    .replace(/\s*\((?:or )?`waymark [^`]*`\)/g, "")
    .replace(/`waymark [^`]*`,? or /g, "")
    .replace(/,? or `waymark [^`]*`/g, "");
  // A clause that still gives a command line goes whole.
  t = t
    .split("\n")
    .map((line) => {
      const pieces = line.replace(/([.;])\s+/g, "$1\u0000").split("\u0000");
      const kept = pieces.filter((piece) => !/\bwaymark [a-z][\w-]*/.test(piece));
      // What is left ends as a sentence ("…; to rewind, run: waymark …" → "….").
      return kept.length === pieces.length ? line : kept.join(" ").replace(/[;,:]\s*$/, ".");
    })
    .join("\n");
  t = t
    .replace(/\s*\(sha256 [0-9a-f]{6,}\)/g, "")
    .replace(/\b[0-9a-f]{64}\b/g, "")
    // "(plan plan-…)", "(q-…)": the whole parenthesis; a bare id: the id.
    .replace(new RegExp(String.raw`\s*\((?:[a-z]+ )?${ID}\)`, "g"), "")
    .replace(new RegExp(ID, "g"), "")
    .replace(/(^|[\s("'`])(\/[^\s/"'`)]+(?:\/[^\s"'`)]*)+)/g, (_, before: string, path: string) => before + shortPath(path));
  return t
    .replace(/\s+/g, " ")
    .replace(/\s+([.,;:)])/g, "$1")
    .replace(/\(\s*\)/g, "")
    .trim();
}

/** The first line of `text` that says something. */
const firstLine = (text: string) => text.split("\n").find((l) => l.trim() !== "")?.trim() ?? "";

const PLAN_STATUS: Record<string, string> = {
  drafting: "the plan is being drafted",
  awaiting_approval: "the plan waits for your review",
  approved: "the plan is approved",
  rejected: "the plan was rejected",
  withdrawn: "the plan was withdrawn",
  left: "plan mode was left without a decision",
};

const WAITING = {
  permission: "your permission",
  plan_entry: "your answer on planning first",
  plan_approval: "your review of the plan",
  goal_approval: "your answer on the goal",
  elicitation: "a form to fill in",
  project_servers: "your answer on the project's tool servers",
  project_hooks: "your answer on the project's hooks",
} satisfies Record<QuestionnaireKind, string>;

/** `/plan status`: "Plan mode: on", "Plan file: …", "Plan: <id> (<status>, N revisions)",
 *  "Waiting for: <kind> (<id>)", as a sentence. */
function planStatus(text: string): string {
  const mode = text.match(/^Plan mode: (\w+)/m)?.[1] ?? "off";
  const plan = text.match(/^Plan: \S+ \((\w+), (\d+) revisions?\)/m);
  const waiting = text.match(/^Waiting for: (\w+)/m)?.[1];
  const parts = [`Plan mode is ${mode}`];
  if (plan) {
    const n = Number(plan[2]);
    const revisions = n ? ` (${n} revision${n === 1 ? "" : "s"})` : "";
    parts.push(`${PLAN_STATUS[plan[1]] ?? `the plan is ${plan[1].replace(/_/g, " ")}`}${revisions}`);
  } else parts.push("no plan yet");
  if (waiting) parts.push(`waiting for ${(WAITING as Record<string, string | undefined>)[waiting] ?? "your answer"}`);
  return `${parts.join("; ")}.`;
}

function planNotice(text: string): string | null {
  const first = firstLine(text);
  // `/plan on` and `/plan off`: the session's `plan.mode_changed` says it (`planModeNotice`),
  // once.
  if (/^Plan mode is (?:on|off)\b/.test(first)) return null;
  if (/^Plan mode: /.test(first)) return planStatus(text);
  if (first.startsWith("There is no plan file yet")) return "There is no plan yet.";
  if (/ is empty\.$/.test(first)) return "The plan is empty.";
  // `/plan view`: the file's path, then its text.
  if (first.endsWith(":")) return "The plan shows in the Plan tab.";
  return scrubCli(first);
}

/** What the goal's own events already say in the transcript (set, paused, cleared…). */
const GOAL_SAID = /^Goal (?:set|replaced|paused|resumed|cleared|updated)\.$/;

function goalNotice(text: string): string | null {
  const first = firstLine(text);
  if (GOAL_SAID.test(first)) return null;
  if (first.startsWith("No goal is set")) return "No goal is set: set one in the Goal tab.";
  // The goal described (a budget change, or `/goal` from the terminal).
  if (first.startsWith("Goal: ")) {
    const status = text.match(/^Status: (\w+)/m)?.[1];
    return scrubCli(`${first}${status ? ` (${status.replace(/_/g, " ")})` : ""}`);
  }
  return scrubCli(first);
}

/** `/instructions`: the files as their names and scopes. */
function instructionsNotice(text: string): string {
  const files = text
    .split("\n")
    .filter((l) => /^ {2}\S/.test(l))
    .map((l) => l.trim().match(/^(.*?) \(([^)]*)\)/))
    .filter((m): m is RegExpMatchArray => m !== null)
    .map((m) => `${shortPath(m[1])} (${m[2]})`);
  if (!files.length) return scrubCli(firstLine(text).replace(/:$/, "."));
  return `This session follows ${files.length} instruction file${files.length === 1 ? "" : "s"}: ${files.join(", ")}.`;
}

/** `/mcp`: one server a line ("name — state · N tools · target"), its tools indented. */
function mcpNotice(text: string): string {
  if (text.startsWith("No MCP servers")) return "No tool servers are set up: add one in Settings, under Tool servers.";
  const servers = text
    .split("\n")
    .filter((l) => l.trim() !== "" && !/^\s/.test(l))
    .map((l) => {
      const [name, rest = ""] = l.split(" — ");
      const [state, tools] = rest.split(" · ");
      return `${name} (${scrubCli(state)}${tools?.endsWith("tools") ? `, ${tools}` : ""})`;
    });
  return `Tool servers: ${servers.join(", ")}.`;
}

/**
 * What a command the session ran said, as one line in words for the transcript; null when
 * the session's own events already say it (plan mode on or off; a goal set, paused or
 * cleared). `command` is its name without the slash, `text` what the runtime answered.
 */
export function commandNotice(command: string, text: string): string | null {
  if (text.trim() === "") return null;
  switch (command) {
    case "plan":
      return planNotice(text);
    case "goal":
      return goalNotice(text);
    case "instructions":
      return instructionsNotice(text);
    case "mcp":
      return mcpNotice(text);
    case "help":
      return "The commands are listed under /help (or press ? outside the composer).";
    case "rewind":
      return "To rewind, type /rewind and choose a point, or use Rewind to here on a message.";
    case "worktree": {
      const w = text.match(/ on branch (\S+) \((\w+)\)/);
      return w ? `This session works in its own worktree, on branch ${w[1]} (${w[2]}): Review & merge is above the transcript.` : scrubCli(firstLine(text));
    }
    default:
      return scrubCli(firstLine(text));
  }
}
