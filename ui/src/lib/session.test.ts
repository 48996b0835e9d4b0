import { describe, expect, it } from "vitest";
import { applyEvent, catchUpAfter, changedFiles, emptySession, fromView, isOwnPlanFile, LIVE_LINES, modelLabel, placement, type SessionState } from "./session";
import type { Goal, WireEvent } from "./types";
import { planApproval } from "../test/questions";

const S = "s1";
let seq = 0;
/** An event as the runtime sends it: a logged one takes the next `seq`, a transient one
 *  repeats the newest. */
function ev<T extends WireEvent["type"]>(type: T, body: Omit<Extract<WireEvent, { type: T }>, "type" | "session_id" | "seq" | "ts" | "transient">, transient = false): WireEvent {
  if (!transient) seq += 1;
  return { session_id: S, seq, ts: 1_000, transient, type, ...body } as unknown as WireEvent;
}
function run(events: WireEvent[]): SessionState {
  return events.reduce(applyEvent, emptySession(S));
}
const usage = { input_tokens: 10, output_tokens: 5, cached_tokens: 0 };

describe("session reducer", () => {
  it("knows from the log that a rewind undid the one before it", () => {
    seq = 0;
    const rewound = (to: string, undo: string) => ev("session.rewound", { checkpoint_id: to, undo_checkpoint_id: undo, scope: "both", rewound_turns: [], files: [{ path: "a.txt", change: "modified" }] });
    const s = run([rewound("cp-2", "cp-u1"), rewound("cp-u1", "cp-u2")]);
    expect(s.lastRewind).toEqual({ checkpoint: "cp-u1", undo: "cp-u2", files: 1, turns: 0, undid: true });
    const said = s.items.at(-1);
    expect(said?.kind === "chip" && said.text).toBe("Undid the rewind: 1 file changed back");
    seq = 0;
    expect(run([rewound("cp-2", "cp-u1")]).lastRewind?.undid).toBe(false);
  });

  it("follows the model and permission mode the user switches to, saying so in a line", () => {
    seq = 0;
    const s = run([
      ev("session.started", { workspace: "/w", session_dir: "/d", model: "scripted:/tmp/a/demo.json", permission_mode: "ask", interaction_mode: "default", resumed: false, context_window: 8000 }),
      ev("session.configured", { model: "openai:gpt-4.1", permission_mode: "read-only", context_window: 128000 }),
    ]);
    expect([s.model, s.permission, s.context?.window]).toEqual(["openai:gpt-4.1", "read-only", 128000]);
    const said = s.items.at(-1);
    expect(said?.kind === "chip" && said.text).toBe("Now on openai:gpt-4.1 · Read only");
  });

  it("shows the input a policy rewrote in the call's own row", () => {
    seq = 0;
    const s = run([
      ev("message.admitted", { message_id: 1, source: "user", text: "write it", position: "tail" }),
      ev("turn.started", { turn_id: 1, message_id: 1, source: "user" }),
      ev("assistant.message", { turn_id: 1, text: "Writing", tool_calls: [{ call_id: "c9", name: "write" }], usage }),
      ev("tool.call", { turn_id: 1, call_id: "c9", name: "write", arguments: { path: "a.txt" } }),
      ev("tool.call", { turn_id: 1, call_id: "c9", name: "write", arguments: { path: "safe/a.txt" } }),
    ]);
    const moved = s.items[s.items.length - 1];
    expect(moved.kind === "assistant" && moved.tools.map((x) => [x.callId, x.args])).toEqual([["c9", { path: "safe/a.txt" }]]);
  });

  it("builds user, streamed assistant text, tool calls and results in order", () => {
    seq = 0;
    const s = run([
      ev("message.admitted", { message_id: 1, source: "user", text: "fix it", position: "tail" }),
      ev("turn.started", { turn_id: 1, message_id: 1, source: "user" }),
      ev("assistant.delta", { turn_id: 1, text: "Look" }, true),
      ev("assistant.delta", { turn_id: 1, text: "ing" }, true),
    ]);
    expect(s.streaming).toEqual({ turnId: 1, text: "Looking" });
    expect(s.running).toBe(true);
    const t = [
      ev("assistant.message", { turn_id: 1, text: "Looking", tool_calls: [{ call_id: "c1", name: "read_file" }], usage }),
      ev("tool.call", { turn_id: 1, call_id: "c1", name: "read_file", arguments: { path: "a.rs" } }),
      ev("tool.result", { turn_id: 1, call_id: "c1", name: "read_file", status: "ok", content: "fn main() {}" }),
      ev("assistant.message", { turn_id: 1, text: "Done.", tool_calls: [], usage }),
      ev("turn.finished", { turn_id: 1, reason: "completed", usage, steps: 2 }),
      ev("session.idle", {}),
    ].reduce(applyEvent, s);
    expect(t.streaming).toBeNull();
    expect(t.running).toBe(false);
    expect(t.items.map((i) => i.kind)).toEqual(["user", "assistant", "assistant"]);
    const first = t.items[1];
    expect(first.kind === "assistant" && first.tools[0]).toMatchObject({ name: "read_file", status: "ok", output: "fn main() {}", verifier: false });
    // The goal's reviewer works after the turn, under its id: its calls are marked as its own.
    const v = [
      ev("tool.call", { turn_id: 1, call_id: "tv_1_0_0", name: "bash", arguments: { command: "cargo test" }, actor: "verifier" }),
      ev("tool.result", { turn_id: 1, call_id: "tv_1_0_0", name: "bash", status: "ok", content: "ok", actor: "verifier" }),
    ].reduce(applyEvent, t);
    const last = v.items[v.items.length - 1];
    expect(last.kind === "assistant" && last.tools.map((x) => [x.name, x.verifier])).toEqual([["bash", true]]);
    // A subagent's calls are marked as its own, with how deep it runs.
    const sub = [
      ev("tool.call", { turn_id: 1, call_id: "ta-x_1_0_0", name: "write", arguments: { path: "a.txt" }, actor: { subagent: 2 } }),
      ev("tool.result", { turn_id: 1, call_id: "ta-x_1_0_0", name: "write", status: "ok", content: "ok", actor: { subagent: 2 } }),
    ].reduce(applyEvent, v);
    const subLast = sub.items[sub.items.length - 1];
    expect(subLast.kind === "assistant" && subLast.tools.map((x) => [x.name, x.verifier, x.subagent])).toEqual([["bash", true, undefined], ["write", false, 2]]);
  });

  it("keeps a running call's newest progress until its result, which brings its images", () => {
    seq = 0;
    const name = "mcp__everything__trigger-long-running-operation";
    let s = run([
      ev("turn.started", { turn_id: 1, message_id: 1, source: "user" }),
      ev("tool.call", { turn_id: 1, call_id: "c1", name, arguments: { duration: 4, steps: 8 } }),
    ]);
    const tool = () => {
      const it = s.items.at(-1);
      return it?.kind === "assistant" ? it.tools[0] : null;
    };
    s = applyEvent(s, ev("tool.progress", { turn_id: 1, call_id: "c1", progress: 2, total: 8, message: "Step 2 of 8" }, true));
    expect(tool()?.progress).toEqual({ progress: 2, total: 8, message: "Step 2 of 8" });
    s = applyEvent(s, ev("tool.progress", { turn_id: 1, call_id: "c1", progress: 3 }, true));
    expect(tool()?.progress).toEqual({ progress: 3, total: null, message: null });
    // Another call's progress changes nothing here.
    const before = s;
    s = applyEvent(s, ev("tool.progress", { turn_id: 1, call_id: "other", progress: 1 }, true));
    expect(s).toBe(before);
    s = applyEvent(s, ev("tool.result", { turn_id: 1, call_id: "c1", name, status: "ok", content: "done", images: [{ mime: "image/png", data: "iVBORw0KGgo=" }] }));
    expect(tool()).toMatchObject({ status: "ok", progress: null, images: [{ mime: "image/png", data: "iVBORw0KGgo=" }] });
    // A report that arrives after the result is not shown.
    s = applyEvent(s, ev("tool.progress", { turn_id: 1, call_id: "c1", progress: 8, total: 8 }, true));
    expect(tool()?.progress).toBeNull();
  });

  it("puts a subagent's calls under the task call that started it, live, results and output included", () => {
    // `ev` takes the fields every `tool.call` has; a subagent's adds its parent's.
    const childCall = (body: Record<string, unknown>) => ev("tool.call", body as never);
    seq = 0;
    let s = run([
      ev("turn.started", { turn_id: 1, message_id: 1, source: "user" }),
      ev("tool.call", { turn_id: 1, call_id: "t1", name: "task", arguments: { prompt: "look", agent: "explore" } }),
      childCall({ turn_id: 1, call_id: "ta-x_1_0_0", name: "bash", arguments: { command: "ls" }, actor: { subagent: 1 }, parent_call_id: "t1", agent: "explore" }),
    ]);
    const task = () => {
      const it = s.items.at(-1);
      return it?.kind === "assistant" ? it.tools : [];
    };
    expect(task()).toHaveLength(1);
    expect(task()[0]).toMatchObject({ name: "task", agent: "explore", status: "running" });
    expect(task()[0].children?.map((c) => [c.name, c.status, c.subagent])).toEqual([["bash", "running", 1]]);
    s = applyEvent(s, ev("tool.output", { turn_id: 1, call_id: "ta-x_1_0_0", text: "a.txt\n" }, true));
    expect(task()[0].children?.[0].live).toBe("a.txt\n");
    s = applyEvent(s, ev("tool.result", { turn_id: 1, call_id: "ta-x_1_0_0", name: "bash", status: "ok", content: "a.txt" }));
    expect(task()[0].children?.[0]).toMatchObject({ status: "ok", output: "a.txt" });
    expect(task()[0].status).toBe("running");
    s = applyEvent(s, ev("tool.result", { turn_id: 1, call_id: "t1", name: "task", status: "ok", content: "report" }));
    expect(task()[0]).toMatchObject({ status: "ok", output: "report" });
    // A call naming a parent that is not in the transcript stays a call of its own.
    s = applyEvent(s, childCall({ turn_id: 1, call_id: "ta-y_1_0_0", name: "read_file", arguments: {}, actor: { subagent: 1 }, parent_call_id: "gone", agent: "general" }));
    expect(task().map((t) => t.name)).toEqual(["task", "read_file"]);
  });

  it("keeps a running command's newest output lines as they arrive, and drops them at its result", () => {
    seq = 0;
    let s = run([ev("turn.started", { turn_id: 1, message_id: 1, source: "user" }), ev("tool.call", { turn_id: 1, call_id: "c1", name: "bash", arguments: { command: "make" } })]);
    const tool = () => {
      const it = s.items.at(-1);
      return it?.kind === "assistant" ? it.tools[0] : null;
    };
    s = applyEvent(s, ev("tool.output", { turn_id: 1, call_id: "c1", text: "line 1\n" }, true));
    s = applyEvent(s, ev("tool.output", { turn_id: 1, call_id: "c1", text: "line 2\nline 3\n" }, true));
    expect(tool()?.live).toBe("line 1\nline 2\nline 3\n");
    // Only the newest lines are kept.
    for (let i = 4; i <= 40; i++) s = applyEvent(s, ev("tool.output", { turn_id: 1, call_id: "c1", text: `line ${i}\n` }, true));
    expect(tool()?.live?.split("\n").filter(Boolean)).toEqual(Array.from({ length: LIVE_LINES }, (_, i) => `line ${40 - LIVE_LINES + 1 + i}`));
    s = applyEvent(s, ev("tool.result", { turn_id: 1, call_id: "c1", name: "bash", status: "ok", content: "all\n[exit code: 0]" }));
    expect(tool()?.live).toBeUndefined();
  });

  it("shows the messages written for the user's answers as cards, in the user's own words", () => {
    seq = 0;
    const opened = (id: string, version: number) => ev("questionnaire.opened", { id, question: { kind: "plan_approval", payload: planApproval({ version }) } });
    const s = run([
      opened("q1", 1),
      // The reply to a review is queued before its answer is logged: the card catches up.
      ev("message.admitted", { message_id: 5, source: "questionnaire", text: "The user reviewed revision v1 of the plan and asks for changes.\n…", position: "head", idempotency_key: "plan-revise:q1" }),
      ev("questionnaire.answered", { id: "q1", kind: "plan_approval", answer: { answer: "revise", text: "  Keep the old flag. ", comments: [{ start: 2, end: 2, text: "why?" }, { start: 4, end: 5, text: "no" }] } }),
      opened("q2", 2),
      ev("questionnaire.answered", { id: "q2", kind: "plan_approval", answer: { answer: "approve", as_goal: { tokens: null, turns: null, seconds: null } } }),
      ev("message.admitted", { message_id: 6, source: "questionnaire", text: "Implement the plan below. …", position: "head", idempotency_key: "plan-approval:q2" }),
      ev("message.admitted", { message_id: 7, source: "questionnaire", text: "something else", position: "head", idempotency_key: "other:q9" }),
    ]);
    const cards = s.items.map((i) => (i.kind === "card" ? [i.title, i.words, i.action] : [i.kind]));
    expect(cards).toEqual([
      ["You asked for changes to the plan v1 · 2 line comments", "Keep the old flag.", "show-plan"],
      ["Implementing the approved plan v2 as a goal", null, "show-plan"],
      ["user"],
    ]);
  });

  it("says where a plan approved into a new worktree is implemented", () => {
    seq = 0;
    const s = run([
      ev("questionnaire.opened", { id: "q1", question: { kind: "plan_approval", payload: planApproval({ version: 1 }) } }),
      ev("questionnaire.answered", { id: "q1", kind: "plan_approval", answer: { answer: "approve", as_goal: { tokens: null, turns: null, seconds: null }, handed_to: "s-two" } }),
    ]);
    const said = s.items.filter((i) => i.kind === "chip").map((i) => (i.kind === "chip" ? i.text : ""));
    expect(said).toContain("Plan approved: implemented as a goal by a new session, in its own worktree");
    expect(s.pending).toBeNull();
  });

  it("follows a review the user's edit moved to their revision", () => {
    seq = 0;
    const s = run([
      ev("questionnaire.opened", { id: "q1", question: { kind: "plan_approval", payload: planApproval({ version: 1 }) } }),
      ev("questionnaire.updated", { id: "q1", question: { kind: "plan_approval", payload: planApproval({ version: 2 }) } }),
    ]);
    const q = s.pending?.question;
    expect(q?.kind === "plan_approval" && q.payload.version).toBe(2);
    expect(s.asked.q1.version).toBe(2);
  });

  it("remembers a review put off with Not now until the plan is reviewed again", () => {
    seq = 0;
    const opened = (id: string) => ev("questionnaire.opened", { id, question: { kind: "plan_approval", payload: planApproval({}) } });
    const answered = (id: string, answer: "defer" | "reject") =>
      ev("questionnaire.answered", { id, kind: "plan_approval", answer: { answer } });
    let s = run([opened("q1"), answered("q1", "defer")]);
    expect(s.deferred).toBe(true);
    s = [opened("q2")].reduce(applyEvent, s);
    expect(s.deferred).toBe(false);
    s = [answered("q2", "defer"), ev("plan.mode_changed", { mode: "default", reason: "command" })].reduce(applyEvent, s);
    expect(s.deferred).toBe(false);
  });

  it("lists every file the tools changed, first changed first, with each change in order", () => {
    seq = 0;
    const change = (path: string, op: string, diff: string) => ({ path, op, diff, note: null });
    const s = run([
      ev("session.started", { workspace: "/ws", session_dir: "/d", model: "m", permission_mode: "auto", interaction_mode: "default", resumed: false, context_window: 0 }),
      ev("tool.call", { turn_id: 1, call_id: "c1", name: "write", arguments: { path: "a.txt" } }),
      ev("tool.result", { turn_id: 1, call_id: "c1", name: "write", status: "ok", content: "created", changes: [change("a.txt", "create", "+a")] }),
      ev("tool.call", { turn_id: 1, call_id: "c2", name: "apply_patch", arguments: { patch: "…" } }),
      ev("tool.result", { turn_id: 1, call_id: "c2", name: "apply_patch", status: "ok", content: "ok", changes: [change("b.txt", "modify", "+b"), change("a.txt", "modify", "+a2")] }),
      ev("tool.call", { turn_id: 1, call_id: "c3", name: "edit", arguments: { path: "c.txt" } }),
      ev("tool.result", { turn_id: 1, call_id: "c3", name: "edit", status: "error", content: "no match" }),
    ]);
    expect(s.workspace).toBe("/ws");
    const files = changedFiles(s).map((f) => [f.path, f.changes.map((c) => `${c.callId}:${c.change.diff}`)]);
    expect(files).toEqual([
      ["a.txt", ["c1:+a", "c2:+a2"]],
      ["b.txt", ["c2:+b"]],
    ]);
  });

  it("leaves the session's own plan file out of the changed files", () => {
    seq = 0;
    const change = (path: string, resolved?: string) => ({ path, ...(resolved === undefined ? {} : { resolved }), op: "create", diff: "+x", note: null });
    const s = run([
      ev("tool.call", { turn_id: 1, call_id: "c1", name: "write", arguments: { path: "p" } }),
      ev("tool.result", { turn_id: 1, call_id: "c1", name: "write", status: "ok", content: "ok", changes: [
        // Given as the model wrote it; resolved with the data folder's symlink followed.
        change(`/home/u/.local/share/waymark/sessions/${S}/artifacts/plan.md`, `/data/waymark/sessions/${S}/artifacts/plan.md`),
        change("notes.md", "/ws/notes.md"),
        // Another session's plan, and a project file that happens to be called plan.md.
        change("/d/sessions/other/artifacts/plan.md"),
        change("docs/plan.md", "/ws/docs/plan.md"),
      ] }),
    ]);
    expect(changedFiles(s).map((f) => f.path)).toEqual(["notes.md", "/d/sessions/other/artifacts/plan.md", "docs/plan.md"]);
    expect(isOwnPlanFile(change(`C:\\data\\sessions\\${S}\\artifacts\\plan.md`), S)).toBe(true);
  });

  it("shows goal continuations as chips and tracks the goal snapshot", () => {
    seq = 0;
    const report = { limit: 100, used: 40, remaining: 60, reached: false };
    const goal: Goal = { goal_id: "g1", objective: "ship", criteria: null, status: "active", reason: "created", actor: "user", revision: 1, budget: { tokens: report, main_turns: report, active_seconds: report }, over_budget: false, question: null, usage_limit: null, steps: [] };
    const s = run([
      ev("goal.create", { goal }),
      ev("message.admitted", { message_id: 2, source: "goal", text: "continue", position: "tail" }),
      ev("goal.updated", { ...goal, status: "blocked" as const, reason: "worker_reported" as const, actor: "model" as const }, true),
    ]);
    expect(s.items.map((i) => (i.kind === "chip" ? i.text : i.kind))).toEqual(["Goal set: ship", "Goal continues"]);
    expect(s.goal?.status).toBe("blocked");
    expect(s.goal?.actor).toBe("model");
    const cleared = applyEvent(s, ev("goal.clear", { goal_id: "g1", actor: "user" }));
    expect(cleared.goal).toBeNull();
    // The queue follows its logged changes, whole each time, with no transcript line.
    const docs = { id: 3, objective: "docs", tokens: null, turns: 2, seconds: null, cost_micros: null };
    const queued = applyEvent(cleared, ev("goal.queue", { queue: [docs] }));
    expect(queued.goalQueue).toEqual([docs]);
    expect(queued.items.length).toBe(cleared.items.length);
    expect(applyEvent(queued, ev("goal.queue", { queue: [] })).goalQueue).toEqual([]);
  });

  it("opens and closes questionnaires and follows plan mode", () => {
    seq = 0;
    const s = run([
      ev("plan.mode_changed", { mode: "plan", plan_id: "p1", reason: "intent" }),
      ev("questionnaire.opened", { id: "q1", question: { kind: "plan_approval", payload: planApproval({}) } }),
      ev("session.waiting", { questionnaire_id: "q1", kind: "plan_approval" }),
    ]);
    expect(s.mode).toBe("plan");
    expect(s.pending?.id).toBe("q1");
    const t = [
      ev("questionnaire.answered", { id: "q1", kind: "plan_approval", answer: { answer: "reject" } }),
      ev("plan.mode_changed", { mode: "default", reason: "rejected" }),
    ].reduce(applyEvent, s);
    expect(t.pending).toBeNull();
    expect(t.mode).toBe("default");
  });

  it("ignores replays and records a gap in the log instead of applying past it", () => {
    seq = 0;
    const a = ev("message.admitted", { message_id: 1, source: "user", text: "hi", position: "tail" });
    const s = run([a, a]);
    expect(s.items).toHaveLength(1);
    expect(catchUpAfter(s)).toBeNull();
    seq += 5;
    const late = ev("session.idle", {});
    const behind = applyEvent(s, late);
    expect(behind.behind).toBe(late.seq);
    expect(behind.lastSeq).toBe(1);
    expect(catchUpAfter(behind)).toBe(1);
    const other = { ...late, session_id: "other" };
    expect(applyEvent(s, other)).toBe(s);
  });
});

describe("transient events, told apart by their flag", () => {
  it("applies a transient event without moving the log position; a logged one moves it", () => {
    seq = 0;
    const started = ev("turn.started", { turn_id: 1, message_id: 1, source: "user" });
    const s = run([started]);
    const delta = ev("assistant.delta", { turn_id: 1, text: "hi" }, true);
    expect(placement(s, delta)).toBe("transient");
    expect(placement(s, started)).toBe("seen"); // the same logged event again
    const t = applyEvent(s, delta);
    expect(t.streaming?.text).toBe("hi");
    expect(t.lastSeq).toBe(s.lastSeq); // a transient event never moves the log position
    expect(applyEvent(t, { ...delta, transient: false })).toBe(t); // a logged one at that seq was seen
    const message = ev("assistant.message", { turn_id: 1, text: "hi", tool_calls: [], usage });
    expect(placement(t, message)).toBe("next");
    expect(applyEvent(t, message).lastSeq).toBe(s.lastSeq + 1);
  });

  it("drops a transient sent before events already applied", () => {
    seq = 0;
    const s = run([ev("turn.started", { turn_id: 1, message_id: 1, source: "user" })]);
    const stale = ev("assistant.delta", { turn_id: 1, text: "old" }, true);
    const t = applyEvent(s, ev("turn.finished", { turn_id: 1, reason: "completed", usage, steps: 1 }));
    expect(placement(t, stale)).toBe("seen");
    expect(applyEvent(t, stale)).toBe(t);
  });

  it("takes a transient that names a logged event not yet applied as a gap", () => {
    seq = 0;
    const s = run([ev("turn.started", { turn_id: 1, message_id: 1, source: "user" })]);
    seq += 1; // a logged event this state never got
    const retry = ev("model.retry", { attempt: 1, wait_ms: 500, error: { code: "rate_limited", message: "slow down" } }, true);
    expect(placement(s, retry)).toBe("ahead");
    const t = applyEvent(s, retry);
    expect(t.lastSeq).toBe(s.lastSeq);
    expect(catchUpAfter(t)).toBe(s.lastSeq);
  });

  it("keeps the goal snapshot current from the logged update alone", () => {
    seq = 0;
    const report = { limit: 100, used: 40, remaining: 60, reached: false };
    const goal: Goal = { goal_id: "g1", objective: "ship", criteria: null, status: "active", reason: "created", actor: "user", revision: 1, budget: { tokens: report, main_turns: report, active_seconds: report }, over_budget: false, question: null, usage_limit: null, steps: [] };
    const used = { ...report, used: 100, remaining: 0, reached: true };
    const s = run([
      ev("goal.create", { goal }),
      ev("goal.update", { goal_id: "g1", kind: "completion", status: "budget_limited", reason: "tokens", actor: "runtime", usage: { ...goal.budget, tokens: used } }),
    ]);
    expect(s.goal?.status).toBe("budget_limited");
    expect(s.goal?.budget.tokens.reached).toBe(true);
    expect(s.goal?.objective).toBe("ship");
  });
});

describe("a goal's budget running out", () => {
  const report = { limit: 100, used: 40, remaining: 60, reached: false };
  const goal: Goal = { goal_id: "g1", objective: "ship", criteria: null, status: "active", reason: "created", actor: "user", revision: 1, budget: { tokens: report, main_turns: report, active_seconds: report }, over_budget: false, question: null, usage_limit: null, steps: [] };
  const spent = { ...goal.budget, tokens: { ...report, used: 100, remaining: 0, reached: true } };
  const chips = (s: SessionState) => s.items.map((i) => (i.kind === "chip" ? i.text : i.kind));
  /** The stop as the runtime logs it, and the one summary turn it queues (`ev` numbers the
   *  events as they are made, so each is made where it goes). */
  const stop = () => ev("goal.update", { goal_id: "g1", kind: "completion", status: "budget_limited", reason: "tokens", actor: "runtime", usage: spent });
  const summary = (message_id: number) => ev("message.admitted", { message_id, source: "goal", text: "Sum up.", position: "tail", idempotency_key: `goal-summary:g1:${goal.revision}` });
  const summaryTurn = (turn_id: number, message_id: number) => [
    ev("turn.started", { turn_id, message_id, source: "goal" }),
    ev("assistant.message", { turn_id, text: "Step two done.", tool_calls: [], usage }),
    ev("turn.finished", { turn_id, reason: "completed", usage, steps: 1 }),
  ];
  const firstTurn = () => [
    ev("goal.create", { goal }),
    ev("message.admitted", { message_id: 1, source: "goal", text: "contract", position: "tail", idempotency_key: "goal-cont:g1:1:1" }),
    ev("turn.started", { turn_id: 1, message_id: 1, source: "goal" }),
    ev("assistant.message", { turn_id: 1, text: "Working on step two.", tool_calls: [], usage }),
    ev("turn.finished", { turn_id: 1, reason: "completed", usage, steps: 1 }),
  ];
  const ending = "Goal: Stopped: the token budget is used up · the agent sums up what it did";

  it("ends in one line when the budget stops the goal after a turn: no 'Goal continues' under it", () => {
    seq = 0;
    const s = run([...firstTurn(), stop(), summary(2), ...summaryTurn(2, 2)]);
    expect(chips(s)).toEqual(["Goal set: ship", "Goal continues", "assistant", ending, "assistant"]);
  });

  it("takes back the 'Goal continues' of a continuation dropped because the budget ran out", () => {
    seq = 0;
    const s = run([
      ...firstTurn(),
      // Queued while budget was left, found spent when its turn came (the runtime's recheck).
      ev("message.admitted", { message_id: 2, source: "goal", text: "continue", position: "tail", idempotency_key: "goal-cont:g1:1:2" }),
      stop(),
      summary(3),
      ev("message.dropped", { message_id: 2, reason: "the token budget is used up" }),
      ...summaryTurn(2, 3),
    ]);
    const said = chips(s);
    expect(said).toEqual(["Goal set: ship", "Goal continues", "assistant", ending, "assistant"]);
    expect(said.slice(said.indexOf(ending)).includes("Goal continues")).toBe(false);
  });

  it("reads the same from the log as live", () => {
    seq = 0;
    const events = [...firstTurn(), stop(), summary(2), ...summaryTurn(2, 2)];
    const about = { id: S, workspace: "/w", title: null, created_at: 0, updated_at: 0, interaction_mode: "default" as const, permission_mode: "ask" as const, model: null, queued: 0, pending_questionnaire: null };
    const view = { snapshot: { summary: about, session_dir: "/d", messages: [], questionnaires: [], turns: 2, usage, spend: { micros: 0, unpriced_calls: 0 }, cost_usd: 0, last_seq: seq }, events, complete: true, goal: null, goal_queue: [], instructions: [] };
    expect(chips(fromView(view))).toEqual(chips(run(events)));
    expect(chips(fromView(view))).toContain(ending);
  });

  it("says the goal stopped when the stop itself is not in the transcript", () => {
    seq = 0;
    expect(chips(run([summary(5)]))).toEqual(["Goal stopped: the agent sums up what it did"]);
  });
});

describe("bulk replay", () => {
  it("builds the same items as event-by-event application, and leaves a copying state", async () => {
    const { fromView } = await import("./session");
    seq = 0;
    const events: WireEvent[] = [];
    for (let t = 1; t <= 50; t++) {
      events.push(ev("message.admitted", { message_id: t, source: t === 1 ? "user" : "goal", text: `m${t}`, position: "tail" }));
      events.push(ev("turn.started", { turn_id: t, message_id: t, source: "user" }));
      events.push(ev("assistant.message", { turn_id: t, text: `a${t}`, tool_calls: [{ call_id: `c${t}`, name: "list_dir" }], usage }));
      events.push(ev("tool.call", { turn_id: t, call_id: `c${t}`, name: "list_dir", arguments: {} }));
      events.push(ev("tool.result", { turn_id: t, call_id: `c${t}`, name: "list_dir", status: "ok", content: `r${t}` }));
      events.push(ev("turn.finished", { turn_id: t, reason: "completed", usage, steps: 1 }));
    }
    const stepwise = run(events);
    const summary = { id: S, workspace: "/w", title: null, created_at: 0, updated_at: 0, interaction_mode: "default" as const, permission_mode: "ask" as const, model: null, queued: 0, pending_questionnaire: null };
    const view = { snapshot: { summary, session_dir: "/d", messages: [], questionnaires: [], turns: 50, usage, spend: { micros: 0, unpriced_calls: 0 }, cost_usd: 0, last_seq: seq }, events, complete: true, goal: null, goal_queue: [], instructions: [] };
    const bulk = fromView(view);
    expect(bulk.items).toEqual(stepwise.items);
    expect(bulk.bulk).toBe(false);
    const before = bulk.items;
    const next = applyEvent(bulk, ev("message.admitted", { message_id: 99, source: "user", text: "more", position: "tail" }));
    expect(next.items).not.toBe(before);
    expect(before).toHaveLength(stepwise.items.length);
  });
});

describe("compaction", () => {
  it("shows a divider naming why and how much", () => {
    const s = emptySession("s");
    const e = { session_id: "s", seq: 1, ts: 0, transient: false, type: "context.compacted", turn_id: 3, reason: "threshold", before_tokens: 13600, after_tokens: 4200, summary: "…" } as const;
    const next = applyEvent(s, e);
    expect(next.items).toEqual([{ kind: "divider", key: "e1", text: "Earlier conversation summarized (the context window was filling up): about 14k → 4k tokens" }]);
  });
});

describe("context gauge", () => {
  it("follows the window, the newest request and compactions", () => {
    const base = { session_id: "s", ts: 0, transient: false } as const;
    let s = emptySession("s");
    s = applyEvent(s, { ...base, seq: 1, type: "session.started", workspace: "/w", session_dir: "/d", model: "m", permission_mode: "auto", interaction_mode: "default", resumed: false, context_window: 16000 });
    expect(s.context).toEqual({ used: 0, window: 16000 });
    s = applyEvent(s, { ...base, seq: 2, type: "assistant.message", turn_id: 1, text: "hi", tool_calls: [], usage: { input_tokens: 9000, output_tokens: 100, cached_tokens: 0 } });
    expect(s.context).toEqual({ used: 9100, window: 16000 });
    s = applyEvent(s, { ...base, seq: 3, type: "context.compacted", turn_id: 1, reason: "threshold", before_tokens: 13600, after_tokens: 4200, summary: "…" });
    expect(s.context).toEqual({ used: 4200, window: 16000 });
  });

  it("stays unknown for logs that do not name the window", () => {
    const s = applyEvent(emptySession("s"), { session_id: "s", ts: 0, transient: false, seq: 1, type: "session.started", workspace: "/w", session_dir: "/d", model: "m", permission_mode: "auto", interaction_mode: "default", resumed: false, context_window: 0 });
    expect(s.context).toBeNull();
  });
});

describe("opening a log cut off by a closed app", () => {
  it("is not shown as working when its last turn finished", () => {
    const base = { session_id: "s", ts: 0, transient: false } as const;
    const events: WireEvent[] = [
      { ...base, seq: 1, type: "turn.started", turn_id: 1, message_id: 1, source: "goal" },
      { ...base, seq: 2, type: "turn.finished", turn_id: 1, reason: "aborted", usage: { input_tokens: 0, output_tokens: 0, cached_tokens: 0 }, steps: 0 },
    ];
    const usage = { input_tokens: 0, output_tokens: 0, cached_tokens: 0 };
    const summary = { id: "s", workspace: "/w", title: null, model: null, permission_mode: "auto", interaction_mode: "default", created_at: 0, updated_at: 0, queued: 0, pending_questionnaire: null } as never;
    const view = { snapshot: { summary, session_dir: "/d", messages: [], questionnaires: [], turns: 1, usage, spend: { micros: 0, unpriced_calls: 0 }, cost_usd: 0, last_seq: 2 }, events, complete: true, goal: null, goal_queue: [], instructions: [] } as never;
    expect(fromView(view).running).toBe(false);
    expect(fromView({ ...(view as object), events: events.slice(0, 1), snapshot: { summary, session_dir: "/d", messages: [], questionnaires: [], turns: 1, usage, spend: { micros: 0, unpriced_calls: 0 }, cost_usd: 0, last_seq: 1 } } as never).running).toBe(true);
  });
});

describe("a command's output in the transcript", () => {
  it("is a line in words, and none when the session's own events say it", () => {
    seq = 0;
    const plan = "plan-m1x2k9b200a1b2";
    const s = run([
      ev("plan.mode_changed", { mode: "plan", reason: "command" }),
      ev("command.output", { command: "plan", text: `Plan mode is on (plan ${plan}). The next messages are planned, not implemented; the plan goes to /data/sessions/s-m1x2k9a100q7wz/artifacts/plan.md.` }),
      ev("command.output", { command: "goal", text: "Goal paused." }),
      ev("command.output", { command: "compact", text: "There is not enough conversation to summarize yet." }),
    ]);
    const lines = s.items.map((i) => (i.kind === "chip" ? [i.tone, i.text] : [i.kind]));
    expect(lines).toEqual([
      // `/plan on`: one line, from the mode's own event.
      ["plan", "Plan mode is on: your next messages are planned, not implemented (the plan shows in the Plan tab)."],
      ["system", "There is not enough conversation to summarize yet."],
    ]);
  });
});

describe("a model as the window names it", () => {
  it("shows a path by its file name and a script in words", () => {
    expect(modelLabel("openai:gpt-4.1")).toBe("openai:gpt-4.1");
    expect(modelLabel("local:/models/llama-3.gguf")).toBe("local:llama-3.gguf");
    expect(modelLabel("scripted:/tmp/demo/goal.json")).toBe("Offline script (goal.json)");
    expect(modelLabel("ollama")).toBe("ollama");
  });
});
