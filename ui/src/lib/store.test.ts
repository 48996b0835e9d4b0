import { describe, expect, it } from "vitest";
import { blankLeft, emptyStore, reduce, type Action, type Effect, type Store } from "./store";
import { foldLog } from "./session";
import type { EventOf, EventType, Goal, PlanView, SessionSummary, SessionView, WireEvent } from "./types";
import { planApproval } from "../test/questions";

const S = "s1";
/** The events the runtime streams without logging them. */
const STREAMED: EventType[] = ["assistant.delta", "model.retry", "session.error", "goal.updated"];
type Body<T extends EventType> = Omit<EventOf<T>, "type" | "session_id" | "seq" | "ts" | "transient">;
function ev<T extends EventType>(seq: number, type: T, body: Body<T>, session_id = S): WireEvent {
  return { session_id, seq, ts: 1_000 + seq, transient: STREAMED.includes(type), type, ...body } as unknown as WireEvent;
}
const usage = { input_tokens: 10, output_tokens: 5, cached_tokens: 0 };
const said = (seq: number, text: string) => ev(seq, "message.admitted", { message_id: seq, source: "user", text, position: "tail" });
const report = { limit: 1000, used: 0, remaining: 1000, reached: false };
const goal: Goal = { goal_id: "g1", objective: "ship", criteria: null, status: "active", reason: "created", actor: "user", revision: 1, budget: { tokens: report, main_turns: report, active_seconds: report }, over_budget: false, question: null, usage_limit: null, steps: [] };

function view(events: WireEvent[], extra: Partial<SessionView> = {}): SessionView {
  const summary = { id: S, workspace: "/w", title: null, created_at: 0, updated_at: 0, interaction_mode: "default" as const, permission_mode: "ask" as const, model: null, queued: 0, pending_questionnaire: null };
  const last = events.length ? events[events.length - 1].seq : 0;
  return { snapshot: { summary, session_dir: "/d", messages: [], questionnaires: [], turns: 0, usage, spend: { micros: 0, unpriced_calls: 0 }, cost_usd: 0, last_seq: last }, events, complete: true, goal: null, goal_queue: [], instructions: [], ...extra };
}
const plan: PlanView = { path: "/d/artifacts/plan.md", markdown: "# Plan", html: "<h1>Plan</h1>", revisions: [], review: null, plans: [], comments: [] };

/** Applies actions in turn; the effects of the last one are returned with the store. */
function apply(s: Store, ...actions: Action[]): { store: Store; effects: Effect[] } {
  let step = { store: s, effects: [] as Effect[] };
  for (const a of actions) step = reduce(step.store, a);
  return step;
}
function opened(events: WireEvent[], extra: Partial<SessionView> = {}): Store {
  const listed = reduce(emptyStore(), { kind: "listed", sessions: [view([]).snapshot.summary] }).store;
  return apply(listed, { kind: "opened", view: view(events, extra) }, { kind: "plan", id: S, view: plan }).store;
}
const texts = (s: Store) => s.open?.items.map((i) => (i.kind === "user" ? i.text : i.kind)) ?? [];
const reads = (effects: Effect[]) => effects.filter((f) => f.kind === "read-log");

describe("store", () => {
  it("opens a session from its view and asks for what the view lacks", () => {
    const { store, effects } = reduce(emptyStore(), { kind: "opened", view: view([said(1, "hi")], { goal }) });
    expect(texts(store)).toEqual(["hi"]);
    expect(store.panel).toBe("goal"); // a goal and nothing to answer: the Goal tab
    expect(effects).toEqual([
      { kind: "load-plan", id: S },
      { kind: "load-goal-events", id: S },
      { kind: "list-sessions" },
    ]);
    expect(reduce(store, { kind: "plan", id: S, view: plan }).store.plan.html).toBe("<h1>Plan</h1>");
    expect(reduce(store, { kind: "plan", id: "other", view: plan }).store).toBe(store);
  });

  it("reduces live events into the transcript, goal timeline, plan revisions and tab", () => {
    let s = opened([said(1, "hi")]);
    s = apply(s, { kind: "event", event: ev(2, "goal.create", { goal }) }).store;
    expect(s.panel).toBe("goal");
    expect(s.open?.goal?.objective).toBe("ship");
    s = apply(s, { kind: "event", event: ev(3, "turn.finished", { turn_id: 1, reason: "completed", usage, steps: 1 }) }).store;
    expect(s.goalEvents.map((e) => e.type)).toEqual(["goal.create", "turn.finished"]);

    const rev = reduce(s, { kind: "event", event: ev(4, "plan.revision", { plan_id: "p1", version: 1, key: "k", sha256: "x", bytes: 9, author: "model" }) });
    expect(rev.store.plan.view?.revisions.map((r) => [r.version, r.author, r.created_at])).toEqual([[1, "model", 1_004]]);
    expect(rev.effects).toEqual([]); // nothing under review: the event says it all

    const asked = reduce(rev.store, { kind: "event", event: ev(5, "questionnaire.opened", { id: "q1", question: { kind: "plan_approval", payload: planApproval({}) } }) });
    expect(asked.store.panel).toBe("plan");
    expect(asked.store.open?.pending?.id).toBe("q1");
    expect(asked.effects).toContainEqual({ kind: "load-plan", id: S });
    expect(asked.effects).toContainEqual({ kind: "list-sessions" });
  });

  it("lists the sessions again when what the list shows changes: a goal, the model, a wait", () => {
    const s = opened([said(1, "hi")]);
    const blocked = { ...goal, status: "blocked" as const, reason: "worker_reported" as const, question: "Which one?" };
    for (const e of [
      ev(2, "goal.create", { goal }),
      ev(3, "goal.update", { goal: blocked, kind: "status", status: "blocked", reason: "worker_reported", actor: "model", usage_limit: null } as unknown as Body<"goal.update">),
      ev(4, "session.configured", { model: "openai:gpt-4.1", permission_mode: "auto", context_window: 1000 }),
    ]) {
      expect(reduce(s, { kind: "event", event: e }).effects, e.type).toContainEqual({ kind: "list-sessions" });
    }
    // Streamed text changes nothing the list shows.
    expect(reduce(s, { kind: "event", event: ev(1, "assistant.delta", { turn_id: 1, text: "x" }) }).effects).toEqual([]);
  });

  it("follows the plan file, and asks for the review again when one is pending", () => {
    const s = opened([said(1, "hi")]);
    const change = { session_id: S, html: "<p>new</p>", markdown: "new", seen_at_ms: null };
    const plain = reduce(s, { kind: "plan-file", change });
    expect(plain.store.plan.html).toBe("<p>new</p>");
    expect(plain.effects).toEqual([]);
    const reviewed = reduce(s, { kind: "plan", id: S, view: { ...plan, review: { plan_id: "p1", version: 1, file_changed: false } } }).store;
    expect(reduce(reviewed, { kind: "plan-file", change }).effects).toEqual([{ kind: "load-plan", id: S }]);
    expect(reduce(s, { kind: "plan-file", change: { ...change, session_id: "other" } }).store).toBe(s);
  });

  it("reads the revision under review once, and shows it only while that review lasts", () => {
    const s = opened([said(1, "hi")]);
    const review = { plan_id: "p1", version: 2, file_changed: false };
    const asked = reduce(s, { kind: "plan", id: S, view: { ...plan, review } });
    expect(asked.effects).toEqual([{ kind: "load-revision", id: S, planId: "p1", version: 2 }]);
    expect(asked.store.plan.submitted).toBeNull();

    const v2 = { plan_id: "p1", version: 2, markdown: "## v2", html: "<h2>v2</h2>" };
    const read = reduce(asked.store, { kind: "submitted", id: S, revision: v2 }).store;
    expect(read.plan.submitted).toEqual(v2);
    // The file drifts: the view comes again for the same review, and the revision is kept.
    const drifted = reduce(read, { kind: "plan", id: S, view: { ...plan, html: "<p>edited</p>", review: { ...review, file_changed: true } } });
    expect(drifted.effects).toEqual([]);
    expect(drifted.store.plan.submitted).toEqual(v2);
    expect(drifted.store.plan.html).toBe("<p>edited</p>");

    // A newer revision under review is read anew; a late answer for the old one is dropped.
    const v3 = reduce(drifted.store, { kind: "plan", id: S, view: { ...plan, review: { ...review, version: 3 } } });
    expect(v3.effects).toEqual([{ kind: "load-revision", id: S, planId: "p1", version: 3 }]);
    expect(v3.store.plan.submitted).toBeNull();
    expect(reduce(v3.store, { kind: "submitted", id: S, revision: v2 }).store).toBe(v3.store);
    // No review: nothing to read, nothing kept.
    const done = reduce(read, { kind: "plan", id: S, view: plan });
    expect(done.effects).toEqual([]);
    expect(done.store.plan.submitted).toBeNull();
    expect(reduce(s, { kind: "submitted", id: "other", revision: v2 }).store).toBe(s);
  });

  it("refreshes the list for a session it does not list, without touching the open one", () => {
    const s = opened([said(1, "hi")]);
    const step = reduce(s, { kind: "event", event: ev(7, "session.idle", {}, "s2") });
    expect(step.effects).toEqual([{ kind: "list-sessions" }]);
    expect(step.store.open).toBe(s.open);
  });

  it("merges the goal events it loads with those that arrived meanwhile", () => {
    let s = opened([ev(1, "goal.create", { goal })], { goal });
    s = reduce(s, { kind: "event", event: ev(2, "goal.update", { goal_id: "g1", kind: "lifecycle", status: "paused", reason: "user_requested", actor: "user", usage: goal.budget }) }).store;
    const loaded = [ev(1, "goal.create", { goal }), ev(2, "goal.update", { goal_id: "g1", kind: "lifecycle", status: "paused", reason: "user_requested", actor: "user", usage: goal.budget })];
    s = reduce(s, { kind: "goal-events", id: S, events: loaded }).store;
    expect(s.goalEvents.map((e) => e.seq)).toEqual([1, 2]);
    expect(s.open?.goal?.status).toBe("paused");
  });
});

describe("catching up after a gap", () => {
  it("asks once for the log after the last applied event, and reading it closes the gap with nothing twice", () => {
    let s = opened([said(1, "one"), said(2, "two"), ev(3, "goal.create", { goal })]);

    // 4 and 5 never arrive live: 6 is past a gap and is not applied.
    let step = reduce(s, { kind: "event", event: said(6, "six") });
    expect(reads(step.effects)).toEqual([{ kind: "read-log", id: S, after: 3 }]);
    expect(texts(step.store)).toEqual(["one", "two", "chip"]);
    s = step.store;

    // More events while the read is under way: no second read, nothing applied out of order.
    step = reduce(s, { kind: "event", event: said(7, "seven") });
    expect(reads(step.effects)).toEqual([]);
    step = reduce(step.store, { kind: "event", event: ev(7, "assistant.delta", { turn_id: 1, text: "…" }) });
    expect(step.store.open?.streaming).toBeNull();
    // One that does follow on is applied at once.
    step = reduce(step.store, { kind: "event", event: said(4, "four") });
    expect(texts(step.store)).toEqual(["one", "two", "chip", "four"]);
    s = step.store;

    // The log answers from seq 4: already-applied events in it are skipped.
    const log = [said(4, "four"), ev(5, "goal.update", { goal_id: "g1", kind: "completion", status: "active", reason: "created", actor: "runtime", usage: goal.budget }), said(6, "six"), said(7, "seven")];
    step = reduce(s, { kind: "log", id: S, events: log });
    expect(texts(step.store)).toEqual(["one", "two", "chip", "four", "chip", "six", "seven"]);
    expect(step.store.open?.lastSeq).toBe(7);
    expect(step.store.open?.behind).toBeNull();
    expect(reads(step.effects)).toEqual([]);
    expect(step.store.goalEvents.map((e) => e.seq)).toEqual([5]);

    // Live events carry on from there; a late copy of one read from the log changes nothing.
    s = reduce(step.store, { kind: "event", event: said(7, "seven") }).store;
    expect(s).toBe(step.store);
    s = reduce(s, { kind: "event", event: said(8, "eight") }).store;
    expect(texts(s).slice(-2)).toEqual(["seven", "eight"]);
  });

  it("reads on while the log falls short of what was seen, and stops when a read brings nothing", () => {
    let s = opened([said(1, "one")]);
    s = reduce(s, { kind: "event", event: said(10, "ten") }).store;
    const short = reduce(s, { kind: "log", id: S, events: [said(2, "two"), said(3, "three")] });
    expect(reads(short.effects)).toEqual([{ kind: "read-log", id: S, after: 3 }]);
    const empty = reduce(short.store, { kind: "log", id: S, events: [] });
    expect(reads(empty.effects)).toEqual([]);
    expect(empty.store.open?.behind).toBeNull();
  });

  it("ignores a log read for a session that is no longer open", () => {
    const s = opened([said(1, "one")]);
    expect(reduce(s, { kind: "log", id: "other", events: [said(2, "two")] }).store).toBe(s);
  });
});

describe("a long session", () => {
  it("opens on its newest events, then gains the older part without losing what came since", () => {
    const all = Array.from({ length: 10 }, (_, i) => said(i + 1, `m${i + 1}`));
    // The view holds the newest four: the transcript shows them and asks for the rest.
    const newest = { ...view(all.slice(6)), complete: false };
    const first = reduce(emptyStore(), { kind: "opened", view: newest });
    expect(texts(first.store)).toEqual(["m7", "m8", "m9", "m10"]);
    expect(first.store.open?.partial).toBe(true);
    expect(first.effects).toContainEqual({ kind: "load-history", id: S });
    // A message arrives before the older part is read…
    const live = reduce(first.store, { kind: "event", event: said(11, "m11") }).store;
    // …and the log read from the start ends before it: all eleven, and nothing to read again
    // but what the read missed.
    const full = reduce(live, { kind: "history", id: S, folded: foldLog(foldLog(null, S, all.slice(0, 5)), S, all.slice(5)) });
    expect(texts(full.store)).toEqual([...all.map((_, i) => `m${i + 1}`)]);
    expect(full.store.open?.partial).toBe(false);
    expect(reads(full.effects)).toEqual([{ kind: "read-log", id: S, after: 10 }]);
    const caught = reduce(full.store, { kind: "log", id: S, events: [said(11, "m11")] }).store;
    expect(texts(caught).slice(-2)).toEqual(["m10", "m11"]);
    // A complete view asks for nothing more.
    expect(reduce(emptyStore(), { kind: "opened", view: view(all) }).effects).not.toContainEqual({ kind: "load-history", id: S });
  });
});

describe("the session list", () => {
  const listed = (id: string, updated_at: number, title: string | null = null): SessionSummary => ({ ...view([]).snapshot.summary, id, title, updated_at });
  const order = (s: Store) => s.sessions.map((x) => x.id);

  it("shows a new title at once and asks for the list again", () => {
    const s = reduce(emptyStore(), { kind: "listed", sessions: [listed("a", 300), listed("b", 200), listed("c", 100)] }).store;
    const renamed = reduce(s, { kind: "renamed", id: "c", title: "Fix the login" });
    expect(renamed.effects).toEqual([{ kind: "list-sessions" }]);
    expect(order(renamed.store)).toEqual(["a", "b", "c"]);
    expect(renamed.store.sessions[2]).toMatchObject({ title: "Fix the login", updated_at: 100 });
  });

  it("takes the app's order as listed", () => {
    let s = reduce(emptyStore(), { kind: "listed", sessions: [listed("a", 300), listed("b", 200)] }).store;
    s = reduce(s, { kind: "listed", sessions: [listed("b", 400), listed("a", 300)] }).store;
    expect(order(s)).toEqual(["b", "a"]);
  });
});

describe("a blank session left behind", () => {
  const summary = { ...view([]).snapshot.summary };
  const empty: PlanView = { ...plan, markdown: null, html: "" };
  /** The session `S`, listed and open, with its plan read; `events` in its log. */
  function left(events: WireEvent[], extra: { summary?: Partial<SessionSummary>; plan?: Partial<PlanView>; view?: Partial<SessionView> } = {}): Store {
    const listedNow = reduce(emptyStore(), { kind: "listed", sessions: [{ ...summary, ...extra.summary }] }).store;
    return apply(listedNow, { kind: "opened", view: view(events, extra.view) }, { kind: "plan", id: S, view: { ...empty, ...extra.plan } }).store;
  }
  const none = new Set<string>();

  it("is dropped when nothing was ever sent and it has no title", () => {
    const s = left([ev(1, "session.configured", { model: "openai:gpt-4.1", permission_mode: "auto", context_window: 1000 })]);
    expect(blankLeft(s, "other", none)).toBe(S);
    // Not when it is the one being opened again.
    expect(blankLeft(s, S, none)).toBeNull();
  });

  it("is kept with a message, a title, a goal, a plan, a question, or work running", () => {
    expect(blankLeft(left([said(1, "hi")]), "other", none)).toBeNull();
    // A message the view's log does not reach (a long session) is in its snapshot.
    expect(blankLeft(left([], { view: { snapshot: { ...view([]).snapshot, messages: [{}] } } as unknown as Partial<SessionView> }), "other", none)).toBeNull();
    expect(blankLeft(left([], { summary: { title: "Notes" } }), "other", none)).toBeNull();
    expect(blankLeft(left([], { summary: { queued: 1 } }), "other", none)).toBeNull();
    expect(blankLeft(left([], { summary: { worktree: "waymark/try" } }), "other", none)).toBeNull();
    expect(blankLeft(left([], { view: { goal } }), "other", none)).toBeNull();
    expect(blankLeft(left([], { plan: { markdown: "# Plan" } }), "other", none)).toBeNull();
    expect(blankLeft(left([ev(1, "turn.started", { turn_id: 1, message_id: 1, source: "user" })]), "other", none)).toBeNull();
    // Something was sent from the window and its event has not come yet.
    expect(blankLeft(left([]), "other", new Set([S]))).toBeNull();
  });

  it("is kept while what it holds is not all known", () => {
    const listedNow = reduce(emptyStore(), { kind: "listed", sessions: [summary] }).store;
    // Its plan not read yet.
    expect(blankLeft(reduce(listedNow, { kind: "opened", view: view([]) }).store, "other", none)).toBeNull();
    // Not listed yet.
    expect(blankLeft(apply(emptyStore(), { kind: "opened", view: view([]) }, { kind: "plan", id: S, view: empty }).store, "other", none)).toBeNull();
  });
});
