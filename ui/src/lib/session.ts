// The open session as the window shows it, rebuilt from the runtime's typed event stream.
// Everything here is a pure function of (state, event) so it is unit-tested without a window.
import { sayError, type Said } from "./errors";
import type { CallActor, FileChange_Serialize, PermissionMode } from "../bindings";
import { REASON_WORDS } from "./goal";
import { planModeNotice } from "./plan";
import { commandNotice } from "./slash";
import type { Answer } from "./types";
import type { EventOf, Goal, InstructionFile, QueuedGoal, MessageSource, Mode, Questionnaire, SessionView, ToolImage, ToolStatus, WireEvent } from "./types";

/** How deep the subagent that made a call runs, when a subagent made it. */
function subagentDepth(actor: CallActor | undefined): number | undefined {
  return typeof actor === "object" && actor !== null ? actor.subagent : undefined;
}

export type ToolItem = {
  callId: string;
  name: string;
  args: EventOf<"tool.call">["arguments"];
  status: ToolStatus | "running";
  output: string;
  /** The goal's reviewer made this call, not the agent. */
  verifier: boolean;
  /** A subagent the agent started made this call: how deep it runs (1 for the agent's own). */
  subagent?: number;
  /** What a file tool changed, each file with its diff (once it succeeded). */
  changes: FileChange[];
  /** The running call's newest progress report (an MCP server's), until its result. */
  progress?: ToolProgress | null;
  /** A running command's newest output lines, as they arrive (gone once it ends). */
  live?: string;
  /** The images its result carries (an MCP tool's), shown under it. */
  images?: ToolImage[];
  /** A `task` call: the agent it started, and that subagent's own calls, live. */
  agent?: string;
  children?: ToolItem[];
};

/** How far a running call has come, as its tool last said: `progress` of `total` when the
 *  total is known; `progress` null when the report had no number. */
export type ToolProgress = { progress: number | null; total: number | null; message: string | null };

/** A file a tool changed, as its result reports it. */
export type FileChange = FileChange_Serialize;

export type Item =
  | { kind: "user"; key: string; text: string; source: Extract<MessageSource, "user" | "questionnaire">; turn?: number; images?: ToolImage[] }
  | { kind: "chip"; key: string; text: string; tone: "goal" | "system" | "plan" | "error"; detail?: string | null; next?: "settings" | "retry" | null }
  | { kind: "assistant"; key: string; turnId: number; text: string; tools: ToolItem[] }
  /** The model's view of the conversation was compacted here (everything stays shown). */
  | { kind: "divider"; key: string; text: string }
  /** A message the runtime wrote for the user's answer (the implementation of an approved
   *  plan, the reply to a review): said in a line, the full text one click away. */
  | { kind: "card"; key: string; tone: "plan" | "goal"; title: string; words: string | null; detail: string; action: "show-plan" | null; qid: string; from: CardSource };

/** What a card is made from (kept: the answer may be logged after the message). */
type CardSource = Pick<EventOf<"message.admitted">, "message_id" | "text" | "idempotency_key">;

/** What the session's questions asked and how they were answered, by id (the cards say
 *  which revision an answer was about and what the user wrote). */
export type Asked = Record<string, { version: number | null; answer: Answer | null }>;

export type SessionState = {
  id: string;
  asked: Asked;
  /** The user put the plan's review off ("Not now") and has not reviewed it since. */
  deferred: boolean;
  /** The session's folder (paths under it are shown relative to it); null until known. */
  workspace: string | null;
  /** The model spec and permission mode it runs with now; null until known. */
  model: string | null;
  permission: PermissionMode | null;
  items: Item[];
  /** Text streamed for the running model call, by turn. */
  streaming: { turnId: number; text: string } | null;
  running: boolean;
  mode: Mode;
  pending: Questionnaire | null;
  goal: Goal | null;
  /** The goals queued behind it, in line order (G-46). */
  goalQueue: QueuedGoal[];
  /** How full the model's context window is: the tokens of the newest request (as the
   *  provider counted them) or of the history after a compaction; null until known. */
  context: { used: number; window: number } | null;
  /** The instruction files (AGENTS.md) the session took when it started. */
  instructions: InstructionFile[];
  /** The `seq` of the newest logged event applied (a transient event repeats it). */
  lastSeq: number;
  /** Logged events are missing: the newest `seq` known to exist. The log must be read after
   *  `lastSeq` (see `catchUpAfter`); null while the state follows the log without a gap. */
  behind: number | null;
  /** Set only while replaying a log in bulk: items are appended in place instead of copied. */
  bulk?: boolean;
  /** The older part of the log is not applied yet: the session opened on its newest events,
   *  and the rest is being read (`foldLog`, `withFolded`). */
  partial: boolean;
  /** The turns out of the model's history after a rewind (the transcript folds them). */
  rewound: number[];
  /** The newest rewind: where to, and the checkpoint that undoes it ("Undo rewind"). */
  /** The newest rewind; `undid`: it was the Undo of the rewind before it (it went back to
   *  that rewind's undo point). */
  lastRewind: { checkpoint: string; undo: string; files: number; turns: number; undid: boolean } | null;
  /** A message was ever admitted or queued (the user's, a goal's, the system's): the session
   *  is no longer a blank one the window may drop when it is left. */
  messaged: boolean;
};

/** A model spec as the window shows it: a script or file path by its file name, and a
 *  scripted model (the offline demo's) in words. */
export const modelLabel = (spec: string) => {
  const short = spec.replace(/^([\w-]+):(?:.*\/)?([^/]+)$/, "$1:$2");
  return short.startsWith("scripted:") ? `Offline script (${short.slice("scripted:".length)})` : short;
};

/** A permission mode in words (the header's picker uses the same). */
export const PERMISSION_WORDS = {
  ask: "Ask before changes",
  "auto-edit": "Allow edits",
  auto: "Allow everything",
  "read-only": "Read only",
} satisfies Record<PermissionMode, string>;

/** What a permission mode lets the agent do, in a sentence (said once after a switch). */
export const PERMISSION_MEANS = {
  ask: "The agent asks before each change or command.",
  "auto-edit": "The agent edits files without asking; commands still ask.",
  auto: "The agent edits and runs commands without asking, inside the sandbox; plan mode and budgets still hold.",
  "read-only": "The agent can read and search, but not change anything.",
} satisfies Record<PermissionMode, string>;

export function emptySession(id: string): SessionState {
  return { id, asked: {}, deferred: false, workspace: null, model: null, permission: null, items: [], streaming: null, running: false, mode: "default", pending: null, goal: null, goalQueue: [], context: null, instructions: [], lastSeq: 0, behind: null, partial: false, rewound: [], lastRewind: null, messaged: false };
}

/** Builds the state of a freshly opened session from its view (thousands of events: the
 *  items array is grown in place during the replay, then frozen into a normal state). */
export function fromView(view: SessionView): SessionState {
  const first = view.events[0];
  // The view may hold only the newest part of the log: it starts where its events start.
  let s: SessionState = { ...emptySession(view.snapshot.summary.id), lastSeq: first ? first.seq - 1 : view.snapshot.last_seq, bulk: true, partial: !view.complete && first !== undefined && first.seq > 1 };
  for (const e of view.events) s = applyLogged(s, e);
  s = { ...s, bulk: false };
  const pending = view.snapshot.questionnaires.find((q) => q.status === "pending") ?? null;
  return {
    ...s,
    workspace: view.snapshot.summary.workspace,
    mode: view.snapshot.summary.interaction_mode,
    pending,
    goal: view.goal,
    goalQueue: view.goal_queue,
    instructions: view.instructions,
    // The view may start after the first message: the snapshot lists them all.
    messaged: s.messaged || view.snapshot.messages.length > 0,
    behind: s.behind ?? (view.snapshot.last_seq > s.lastSeq ? view.snapshot.last_seq : null),
    // Work is running when a turn started after the last idle/waiting report.
    running: s.running && pending === null,
  };
}

/** The log of session `id` applied from its start, in pieces: `acc` is what the pieces
 *  before gave (null for the first). The result goes to [`withFolded`]. */
export function foldLog(acc: SessionState | null, id: string, events: WireEvent[]): SessionState {
  let s: SessionState = acc ?? { ...emptySession(id), bulk: true };
  for (const e of events) s = applyLogged(s, e);
  return s;
}

/**
 * The open session `now` (opened on its newest events) rebuilt from the log read from its
 * start, folded by [`foldLog`]: the transcript gains its older part. What the view knew
 * beyond the log (the question waiting, the goal, the instructions) stays `now`'s; events
 * applied to `now` past what was read are read again (`behind`).
 */
export function withFolded(now: SessionState, s: SessionState): SessionState {
  if (s.lastSeq === 0) return { ...now, partial: false };
  const behind = now.lastSeq > s.lastSeq ? now.lastSeq : now.behind;
  return {
    ...s,
    bulk: false,
    partial: false,
    workspace: now.workspace ?? s.workspace,
    mode: now.mode,
    pending: now.pending,
    goal: now.goal,
    goalQueue: now.goalQueue,
    instructions: now.instructions,
    running: now.running,
    messaged: now.messaged || s.messaged,
    behind: behind !== null && behind > s.lastSeq ? behind : null,
  };
}

/**
 * Where an event stands against the log applied so far. Logged events carry consecutive
 * `seq`s; a transient one (flagged `transient`, never logged) carries the `seq` of the newest
 * logged event when it was sent:
 * - `next`: the logged event right after `lastSeq`;
 * - `transient`: a transient event sent after the log applied so far;
 * - `seen`: applied already, or older than what is applied (a late transient);
 * - `ahead`: past a gap, so logged events are missing.
 */
export type Placement = "next" | "transient" | "seen" | "ahead";

export function placement(s: SessionState, e: WireEvent): Placement {
  if (e.seq > s.lastSeq) return !e.transient && e.seq === s.lastSeq + 1 ? "next" : "ahead";
  if (e.seq < s.lastSeq) return "seen";
  return e.transient ? "transient" : "seen";
}

/** Applies one event as it arrives live. Past a gap, the event is not applied: the state
 *  records how far the log goes, and the missing events come from reading the log. */
export function applyEvent(s: SessionState, e: WireEvent): SessionState {
  if (e.session_id !== s.id) return s;
  switch (placement(s, e)) {
    case "seen":
      return s;
    case "transient":
      return reduce(s, e);
    case "next":
      return logged(s, e);
    case "ahead":
      return { ...s, behind: Math.max(s.behind ?? 0, e.seq) };
  }
}

/** Applies one event read from the log (never transient): skipped when already applied,
 *  recorded as a gap when it does not follow on. */
export function applyLogged(s: SessionState, e: WireEvent): SessionState {
  if (e.session_id !== s.id || e.seq <= s.lastSeq) return s;
  if (e.seq !== s.lastSeq + 1) return { ...s, behind: Math.max(s.behind ?? 0, e.seq) };
  return logged(s, e);
}

/** The `after` to read the log from, while logged events are missing. */
export function catchUpAfter(s: SessionState): number | null {
  return s.behind === null ? null : s.lastSeq;
}

function logged(s: SessionState, e: WireEvent): SessionState {
  const next = reduce({ ...s, lastSeq: e.seq }, e);
  return next.behind !== null && next.lastSeq >= next.behind ? { ...next, behind: null } : next;
}

/** `items` plus one more: copied normally, pushed in place during a bulk replay. */
function append(s: SessionState, item: Item): Item[] {
  if (s.bulk) {
    s.items.push(item);
    return s.items;
  }
  return [...s.items, item];
}

/** The divider's words for a compaction. */
export function compactedText(e: EventOf<"context.compacted">): string {
  const why = e.reason === "manual" ? "as you asked" : e.reason === "provider_limit" ? "the model refused a request as too long" : "the context window was filling up";
  const k = (n: number) => (n >= 1000 ? `${Math.round(n / 1000)}k` : String(n));
  return `Earlier conversation summarized (${why}): about ${k(e.before_tokens)} → ${k(e.after_tokens)} tokens`;
}

/** A turn's error as a chip in words, with the runtime's own text for its fold. */
function failed(e: WireEvent, said: Said, tone: "system" | "error"): Item {
  return { kind: "chip", key: `e${e.seq}-${e.type}`, text: said.detail ? said.text : `Turn ended: ${said.text}`, tone, detail: said.detail, next: said.next };
}

/** A hook's run in one line: the event, the command, and what came of it. */
export function hookLine(e: EventOf<"hook.ran">): string {
  const ended = e.exit_code === undefined || e.exit_code === null ? "no exit code" : `exit ${e.exit_code}`;
  return `Hook ${e.event}: ${e.command} (${e.source}): ${e.outcome ?? "proceed"} (${ended}, ${e.duration_ms} ms)`;
}

function chip(e: WireEvent, text: string, tone: "goal" | "system" | "plan" | "error"): Item {
  return { kind: "chip", key: `e${e.seq}-${e.type}`, text, tone };
}

/** The newest assistant item of a turn, created when the turn has none yet. */
function withAssistant(s: SessionState, turnId: number, seq: number, f: (a: Extract<Item, { kind: "assistant" }>) => Extract<Item, { kind: "assistant" }>): Item[] {
  const at = s.items.findLastIndex((it) => it.kind === "assistant" && it.turnId === turnId);
  const found = s.items[at];
  if (at >= 0 && found.kind === "assistant") {
    const copy = s.bulk ? s.items : s.items.slice();
    copy[at] = f(found);
    return copy;
  }
  return append(s, f({ kind: "assistant", key: `a${seq}`, turnId, text: "", tools: [] }));
}

/** The items with the call `callId` of turn `turnId` changed by `f`; unchanged when the call
 *  is not in the transcript. */
/** Where the assistant item holding call `callId` of turn `turnId` is, or -1. */
/** Whether `t` is the call `callId`, or a subagent under it made that call. */
const holds = (t: ToolItem, callId: string): boolean => t.callId === callId || (t.children ?? []).some((c) => holds(c, callId));

function toolAt(s: SessionState, turnId: number, callId: string): number {
  return s.items.findLastIndex((it) => it.kind === "assistant" && it.turnId === turnId && it.tools.some((t) => holds(t, callId)));
}

/** `t` with `f` applied to the call `callId`, wherever it is under it. */
function changed(t: ToolItem, callId: string, f: (t: ToolItem) => ToolItem): ToolItem {
  if (t.callId === callId) return f(t);
  if (!t.children || !holds(t, callId)) return t;
  return { ...t, children: t.children.map((c) => changed(c, callId, f)) };
}

function withTool(s: SessionState, turnId: number, callId: string, f: (t: ToolItem) => ToolItem): Item[] {
  const at = toolAt(s, turnId, callId);
  if (at < 0) return s.items;
  const items = s.bulk ? s.items : s.items.slice();
  const it = items[at];
  if (it.kind === "assistant") items[at] = { ...it, tools: it.tools.map((t) => changed(t, callId, f)) };
  return items;
}

/** The card of a message the runtime wrote for an answer, from its idempotency key (which
 *  names the purpose and the question); null for any other message. */
export function answerCard(e: CardSource, asked: Asked): Item | null {
  const [purpose, qid = ""] = (e.idempotency_key ?? "").split(/:(.*)/s);
  const q = qid ? asked[qid] : undefined;
  const v = q?.version != null ? ` v${q.version}` : "";
  const key = `m${e.message_id}`;
  const answer = q?.answer ?? null;
  const from: CardSource = { message_id: e.message_id, text: e.text, idempotency_key: e.idempotency_key };
  switch (purpose) {
    case "plan-approval": {
      const asGoal = answer?.answer === "approve" && answer.as_goal != null;
      return { kind: "card", key, tone: "plan", title: `Implementing the approved plan${v}${asGoal ? " as a goal" : ""}`, words: null, detail: e.text, action: "show-plan", qid, from };
    }
    case "plan-revise": {
      const words = answer?.answer === "revise" ? (answer.text ?? "").trim() : "";
      const n = answer?.answer === "revise" ? (answer.comments?.length ?? 0) : 0;
      const comments = n ? ` · ${n} line comment${n === 1 ? "" : "s"}` : "";
      return { kind: "card", key, tone: "plan", title: `You asked for changes to the plan${v}${comments}`, words: words || null, detail: e.text, action: "show-plan", qid, from };
    }
    case "plan-entry": {
      const agreed = answer?.answer !== "reject";
      return { kind: "card", key, tone: "plan", title: agreed ? "You agreed to plan first" : "You chose to go on without a plan", words: null, detail: e.text, action: null, qid, from };
    }
    default:
      return null;
  }
}

function admitted(e: EventOf<"message.admitted">, asked: Asked): Item {
  switch (e.source) {
    case "user":
      return { kind: "user", key: `m${e.message_id}`, text: e.text, source: "user", ...(e.images?.length ? { images: e.images } : {}) };
    case "questionnaire":
      return answerCard(e, asked) ?? { kind: "user", key: `m${e.message_id}`, text: e.text, source: "questionnaire" };
    case "goal":
      // Keyed by the message: a continuation dropped before it ran takes its line away.
      return { kind: "chip", key: `m${e.message_id}`, text: "Goal continues", tone: "goal" };
    case "system":
      return chip(e, "System message", "system");
  }
}

/** The message the runtime queues for the one summary turn after a goal's budget stop (its
 *  key starts as the runtime's `SUMMARY_KEY`). */
const isSummary = (e: EventOf<"message.admitted">) => (e.idempotency_key ?? "").startsWith("goal-summary:");

/**
 * The items once the summary turn after a budget stop is queued. The stop's own line says
 * the goal ended; it gains that a summary follows, instead of a "Goal continues" under it
 * that reads as if the goal went on.
 */
function summing(s: SessionState, e: EventOf<"message.admitted">): Item[] {
  const note = "the agent sums up what it did";
  for (let i = s.items.length - 1; i >= 0; i--) {
    const it = s.items[i];
    if (it.kind !== "chip") break;
    if (it.key.endsWith("-goal.update")) {
      const items = s.bulk ? s.items : s.items.slice();
      items[i] = { ...it, text: `${it.text} · ${note}` };
      return items;
    }
  }
  return append(s, { kind: "chip", key: `m${e.message_id}`, text: `Goal stopped: ${note}`, tone: "goal" });
}

/** The most lines of a running command's output the transcript keeps while it runs. */
export const LIVE_LINES = 12;

/** The newest [`LIVE_LINES`] whole lines of `text` (and at most 4 KB of them). */
export function liveTail(text: string): string {
  const lines = text.slice(-4096).split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines.slice(-LIVE_LINES).join("\n") + "\n";
}

/** What one event changes in the view (where it stands in the log is settled before). */
function reduce(s: SessionState, e: WireEvent): SessionState {
  switch (e.type) {
    case "session.started":
      return { ...s, workspace: e.workspace, model: e.model, permission: e.permission_mode, mode: e.interaction_mode, context: e.context_window > 0 ? { used: s.context?.used ?? 0, window: e.context_window } : s.context };
    case "session.configured":
      return {
        ...s,
        model: e.model,
        permission: e.permission_mode,
        context: e.context_window > 0 ? { used: s.context?.used ?? 0, window: e.context_window } : s.context,
        items: append(s, chip(e, `Now on ${modelLabel(e.model)} · ${PERMISSION_WORDS[e.permission_mode]}`, "system")),
      };
    case "message.admitted":
      return { ...s, messaged: true, items: e.source === "goal" && isSummary(e) ? summing(s, e) : append(s, admitted(e, s.asked)) };
    case "message.dropped": {
      // A goal continuation that never ran (the goal stopped or changed first).
      const at = s.items.findLastIndex((it) => it.kind === "chip" && it.key === `m${e.message_id}`);
      if (at < 0) return s;
      const items = s.bulk ? s.items : s.items.slice();
      items.splice(at, 1);
      return { ...s, items };
    }
    case "command.output": {
      // A line in words; none when the session's own events say it already.
      const notice = commandNotice(e.command, e.text);
      const tone = e.command === "plan" ? "plan" : e.command === "goal" ? "goal" : "system";
      return notice === null ? s : { ...s, items: append(s, chip(e, notice, tone)) };
    }
    case "turn.started": {
      // The message that started the turn is where "Rewind to here" goes.
      const at = s.items.findLastIndex((it) => it.key === `m${e.message_id}`);
      const found = s.items[at];
      let items = s.items;
      if (found?.kind === "user") {
        items = s.bulk ? s.items : s.items.slice();
        items[at] = { ...found, turn: e.turn_id };
      }
      return { ...s, items, running: true, streaming: null };
    }
    case "assistant.delta": {
      const prev = s.streaming && s.streaming.turnId === e.turn_id ? s.streaming.text : "";
      return { ...s, streaming: { turnId: e.turn_id, text: prev + e.text } };
    }
    case "assistant.message":
      return {
        ...s,
        streaming: null,
        context: s.context && e.usage.input_tokens > 0 ? { ...s.context, used: e.usage.input_tokens + e.usage.output_tokens } : s.context,
        // One item per model reply, so its tool calls follow the text that announced them.
        items: e.text.trim() === "" && e.tool_calls.length === 0 ? s.items : append(s, { kind: "assistant", key: `a${e.seq}`, turnId: e.turn_id, text: e.text, tools: [] }),
      };
    case "model.retry":
      return s;
    case "tool.call": {
      // The same call again: a policy rewrote its input before it ran; the row shows the
      // input that runs.
      if (toolAt(s, e.turn_id, e.call_id) >= 0) {
        return { ...s, items: withTool(s, e.turn_id, e.call_id, (t) => ({ ...t, args: e.arguments })) };
      }
      const call: ToolItem = { callId: e.call_id, name: e.name, args: e.arguments, status: "running", output: "", verifier: e.actor === "verifier", subagent: subagentDepth(e.actor), changes: [] };
      // A subagent's call goes under the `task` call that started it, as it happens.
      const by = "parent_call_id" in e ? { parent: e.parent_call_id, agent: e.agent } : null;
      if (by && toolAt(s, e.turn_id, by.parent) >= 0) {
        return { ...s, items: withTool(s, e.turn_id, by.parent, (t) => ({ ...t, agent: by.agent, children: [...(t.children ?? []), call] })) };
      }
      return {
        ...s,
        items: withAssistant(s, e.turn_id, e.seq, (a) => ({
          ...a,
          tools: [...a.tools, call],
        })),
      };
    }
    case "tool.result": {
      const items = withTool(s, e.turn_id, e.call_id, (t) => ({ ...t, status: e.status, output: e.content, changes: e.changes ?? [], progress: null, live: undefined, images: e.images ?? [] }));
      return items === s.items ? s : { ...s, items };
    }
    case "context.compacted":
      return { ...s, context: s.context && { ...s.context, used: e.after_tokens }, items: append(s, { kind: "divider", key: `e${e.seq}`, text: compactedText(e) }) };
    // A running call's progress (an MCP server's reports; transient): the newest report
    // replaces the one before, and the result takes it away.
    case "tool.progress": {
      const progress: ToolProgress = { progress: e.progress ?? null, total: e.total ?? null, message: e.message ?? null };
      const items = withTool(s, e.turn_id, e.call_id, (t) => (t.status === "running" ? { ...t, progress } : t));
      return items === s.items ? s : { ...s, items };
    }
    case "tool.output": {
      const items = withTool(s, e.turn_id, e.call_id, (t) => (t.status === "running" ? { ...t, live: liveTail((t.live ?? "") + e.text) } : t));
      return items === s.items ? s : { ...s, items };
    }
    case "context.elided":
      return { ...s, items: append(s, chip(e, `Older tool output shortened to fit the model (${e.items} items)`, "system")) };
    case "turn.finished": {
      const items = e.reason === "error" || e.reason === "step_capped" || e.reason === "aborted"
        ? append(s, e.error ? failed(e, sayError(e.error, s.model), e.reason === "error" ? "error" : "system") : chip(e, `Turn ended: ${e.reason.replace("_", " ")}`, "system"))
        : s.items;
      // Replaying a log, a finished turn is not running (a log cut off by a closed app has
      // no `session.idle` after it). Live, the next turn or `session.idle` says what follows.
      return { ...s, items, streaming: null, running: s.bulk ? false : s.running };
    }
    case "questionnaire.opened": {
      const version = e.question.kind === "plan_approval" ? e.question.payload.version : null;
      return { ...s, deferred: e.question.kind === "plan_approval" ? false : s.deferred, asked: { ...s.asked, [e.id]: { version, answer: null } }, pending: { id: e.id, question: e.question, status: "pending", answer: null } };
    }
    case "questionnaire.updated": {
      const version = e.question.kind === "plan_approval" ? e.question.payload.version : null;
      const asked = { ...s.asked, [e.id]: { version, answer: s.asked[e.id]?.answer ?? null } };
      const pending = s.pending && s.pending.id === e.id ? { ...s.pending, question: e.question } : s.pending;
      return { ...s, asked, pending };
    }
    case "questionnaire.answered": {
      const asked = { ...s.asked, [e.id]: { version: s.asked[e.id]?.version ?? null, answer: e.answer } };
      // A card made before its answer was logged says now what the answer was.
      const at = s.items.findLastIndex((it) => it.kind === "card" && it.qid === e.id);
      let items = s.items;
      const card = s.items[at];
      if (card?.kind === "card") {
        items = s.bulk ? s.items : s.items.slice();
        items[at] = answerCard(card.from, asked) ?? card;
      }
      const deferred = e.kind === "plan_approval" ? e.answer.answer === "defer" : s.deferred;
      // Approved to be implemented by another session, in a worktree: said here, since
      // nothing else of it happens in this one.
      if (e.answer.answer === "approve" && e.answer.handed_to) {
        const how = e.answer.as_goal ? "as a goal " : "";
        items = append({ ...s, items }, chip(e, `Plan approved: implemented ${how}by a new session, in its own worktree`, "system"));
      }
      return { ...s, asked, items, deferred, pending: s.pending && s.pending.id === e.id ? null : s.pending };
    }
    case "session.idle":
      return { ...s, running: false, streaming: null };
    case "session.waiting":
      return { ...s, running: false, streaming: null };
    case "session.error":
      return { ...s, items: append(s, chip(e, e.error.message, "error")) };
    case "session.rewound": {
      const what = e.scope === "files" ? "files" : e.scope === "conversation" ? "conversation" : "files and conversation";
      const undid = s.lastRewind !== null && e.checkpoint_id === s.lastRewind.undo;
      const lastRewind = { checkpoint: e.checkpoint_id, undo: e.undo_checkpoint_id, files: e.files.length, turns: e.rewound_turns.length, undid };
      const files = `${e.files.length} file${e.files.length === 1 ? "" : "s"} changed`;
      return { ...s, rewound: e.rewound_turns, lastRewind, items: append(s, chip(e, undid ? `Undid the rewind: ${files} back` : `Rewound (${what}): ${files}`, "system")) };
    }
    case "checkpoint.failed":
      return { ...s, items: append(s, chip(e, e.message, "error")) };
    case "session.notice":
      return { ...s, items: append(s, chip(e, e.text, "system")) };
    case "hook.ran":
      return { ...s, items: append(s, chip(e, hookLine(e), e.outcome ? "error" : "system")) };
    case "plan.mode_changed":
      return { ...s, mode: e.mode, deferred: e.mode === "plan" && s.deferred, items: append(s, chip(e, planModeNotice(e.mode, e.reason), "plan")) };
    case "plan.revision":
      return { ...s, items: append(s, chip(e, `Plan revision v${e.version} by ${e.author}`, "plan")) };
    case "plan.commented":
      return { ...s, items: append(s, chip(e, `${e.comments.length} comment${e.comments.length === 1 ? "" : "s"} on plan v${e.version} sent`, "plan")) };
    case "plan.exported":
      return { ...s, items: append(s, chip(e, `Plan v${e.version} exported to ${e.path}`, "plan")) };
    case "goal.create":
      return { ...s, goal: e.goal, items: append(s, chip(e, `Goal set: ${e.goal.objective}`, "goal")) };
    case "goal.update": {
      // The logged change carries the new status and budget report, so the goal stays right
      // even when the transient snapshot that follows it is missed.
      const usage_limit = e.status === "usage_limited" ? (e.usage_limit ?? s.goal?.usage_limit ?? null) : null;
      const goal = s.goal && s.goal.goal_id === e.goal_id ? { ...s.goal, status: e.status, reason: e.reason, actor: e.actor, budget: e.usage, usage_limit } : s.goal;
      return { ...s, goal, items: append(s, chip(e, `Goal: ${REASON_WORDS[e.reason] ?? e.reason}`, "goal")) };
    }
    case "goal.clear":
      return { ...s, goal: null, items: append(s, chip(e, "Goal cleared", "goal")) };
    case "goal.queue":
      return { ...s, goalQueue: e.queue };
    case "goal.check":
      // A check's run (G-49): the transcript's log has it; the Goal tab's pass-count gauge
      // is still to come (issue 39).
      return s;
    case "goal.updated": {
      const { session_id: _sid, seq: _seq, ts: _ts, transient: _transient, type: _type, ...goal } = e;
      return { ...s, goal };
    }
  }
}

/** Whether a change is to the session's own plan file, `<data>/sessions/<id>/artifacts/plan.md`
 *  (the Plan tab shows it; it is not a change to the project). Matched by its tail: the
 *  resolved path has symlinks followed, so the data folder's own spelling may differ. */
export function isOwnPlanFile(change: FileChange, sessionId: string): boolean {
  const path = (change.resolved ?? change.path).replace(/\\/g, "/");
  return path.endsWith(`/sessions/${sessionId}/artifacts/plan.md`);
}

/** Every file the session's tools changed, in the order first changed, each with its diffs
 *  in order (the reviewer's calls change nothing; the session's own plan file is left out). */
export function changedFiles(s: SessionState): { path: string; changes: { callId: string; change: FileChange }[] }[] {
  const byPath = new Map<string, { callId: string; change: FileChange }[]>();
  for (const it of s.items) {
    if (it.kind !== "assistant") continue;
    for (const t of it.tools) {
      for (const change of t.changes) {
        if (isOwnPlanFile(change, s.id)) continue;
        const list = byPath.get(change.path) ?? [];
        if (!list.length) byPath.set(change.path, list);
        list.push({ callId: t.callId, change });
      }
    }
  }
  return [...byPath].map(([path, changes]) => ({ path, changes }));
}
