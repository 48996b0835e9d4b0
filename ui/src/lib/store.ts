// The window's state in one place: the session list, the open session (transcript, goal),
// its plan and its goal timeline. It changes only through `reduce`, a pure function of
// (store, action) that also says what must be fetched next; `live.svelte.ts` runs those
// fetches and feeds the results and the app's event stream back in as actions.
import { applyEvent, applyLogged, catchUpAfter, fromView, placement, withFolded, type SessionState } from "./session";
import type { PlanRevisionText } from "../bindings";
import type { PlanFileChange, PlanView, SessionSummary, SessionView, WireEvent } from "./types";

/** The side panel's tabs. */
export const PANELS = ["plan", "goal", "changes"] as const;
export type Panel = (typeof PANELS)[number];

export type PlanState = {
  /** The Plan tab as the app last reported it (path, revisions, the review). */
  view: PlanView | null;
  /** The plan file as last rendered (sanitized by the app), and its text. */
  html: string;
  markdown: string | null;
  /** Under review: the revision as it was submitted (what approving implements), once read.
   *  The file may have changed since; the tab shows this, not the file. */
  submitted: PlanRevisionText | null;
};

export type Store = {
  sessions: SessionSummary[];
  open: SessionState | null;
  plan: PlanState;
  /** The goal's events (create, update, clear) and the turns finished under it, oldest
   *  first: the timeline and the burn-down. */
  goalEvents: WireEvent[];
  panel: Panel;
};

export type Action =
  | { kind: "listed"; sessions: SessionSummary[] }
  | { kind: "opened"; view: SessionView }
  | { kind: "event"; event: WireEvent }
  /** Logged events read after a gap, oldest first. */
  | { kind: "log"; id: string; events: WireEvent[] }
  /** The log from its start, read after the session opened on its newest events, and
   *  applied (`foldLog`, in pieces, so the window stays responsive meanwhile). */
  | { kind: "history"; id: string; folded: SessionState }
  | { kind: "plan"; id: string; view: PlanView }
  /** The text of the revision under review, as read for the Plan tab. */
  | { kind: "submitted"; id: string; revision: PlanRevisionText }
  | { kind: "plan-file"; change: PlanFileChange }
  | { kind: "goal-events"; id: string; events: WireEvent[] }
  | { kind: "panel"; panel: Panel }
  /** A session was deleted: gone from the list, and from the window if it was open. */
  | { kind: "deleted"; id: string }
  /** A session was given a new title (not activity: the app keeps its place in the list). */
  | { kind: "renamed"; id: string; title: string };

/** What the store needs fetched. */
export type Effect =
  | { kind: "list-sessions" }
  /** Read the log from its start (the session opened on its newest events). */
  | { kind: "load-history"; id: string }
  | { kind: "load-plan"; id: string }
  | { kind: "load-revision"; id: string; planId: string; version: number }
  | { kind: "load-goal-events"; id: string }
  | { kind: "read-log"; id: string; after: number };

export type Step = { store: Store; effects: Effect[] };

const NO_PLAN: PlanState = { view: null, html: "", markdown: null, submitted: null };

export function emptyStore(): Store {
  return { sessions: [], open: null, plan: NO_PLAN, goalEvents: [], panel: "plan" };
}

export function reduce(s: Store, a: Action): Step {
  switch (a.kind) {
    case "listed":
      return { store: { ...s, sessions: a.sessions }, effects: [] };
    case "opened": {
      const open = fromView(a.view);
      const store: Store = { ...s, open, plan: NO_PLAN, goalEvents: [], panel: open.goal && !open.pending ? "goal" : "plan" };
      const effects: Effect[] = [{ kind: "load-plan", id: open.id }, { kind: "load-goal-events", id: open.id }, { kind: "list-sessions" }];
      // A long session shows its newest part at once; the older part follows.
      if (open.partial) effects.push({ kind: "load-history", id: open.id });
      return { store, effects: [...effects, ...catchUp(open)] };
    }
    case "history": {
      if (s.open?.id !== a.id || !s.open.partial) return { store: s, effects: [] };
      const open = withFolded(s.open, a.folded);
      return { store: { ...s, open }, effects: catchUp(open) };
    }
    case "event":
      return onEvent(s, a.event);
    case "log":
      return onLog(s, a.id, a.events);
    case "plan": {
      if (s.open?.id !== a.id) return { store: s, effects: [] };
      const review = a.view.review;
      // The revision under review is frozen: read once, kept while that review lasts.
      const kept = review && s.plan.submitted && isRevision(s.plan.submitted, review) ? s.plan.submitted : null;
      const plan: PlanState = { view: a.view, html: a.view.html, markdown: a.view.markdown, submitted: kept };
      const effects: Effect[] = review && !kept ? [{ kind: "load-revision", id: a.id, planId: review.plan_id, version: review.version }] : [];
      return { store: { ...s, plan }, effects };
    }
    case "submitted": {
      const review = s.plan.view?.review;
      // Read for a review that has since ended or moved on: not what the tab shows.
      if (s.open?.id !== a.id || !review || !isRevision(a.revision, review)) return { store: s, effects: [] };
      return { store: { ...s, plan: { ...s.plan, submitted: a.revision } }, effects: [] };
    }
    case "plan-file": {
      if (s.open?.id !== a.change.session_id) return { store: s, effects: [] };
      const plan = { ...s.plan, html: a.change.html, markdown: a.change.markdown };
      // Under review, the app says whether the file still matches what was submitted.
      return { store: { ...s, plan }, effects: s.plan.view?.review ? [{ kind: "load-plan", id: a.change.session_id }] : [] };
    }
    case "goal-events":
      if (s.open?.id !== a.id) return { store: s, effects: [] };
      return { store: { ...s, goalEvents: mergeBySeq(a.events, s.goalEvents) }, effects: [] };
    case "panel":
      return { store: { ...s, panel: a.panel }, effects: [] };
    case "deleted": {
      const sessions = s.sessions.filter((x) => x.id !== a.id);
      if (s.open?.id !== a.id) return { store: { ...s, sessions }, effects: [{ kind: "list-sessions" }] };
      return { store: { ...s, sessions, open: null, plan: NO_PLAN, goalEvents: [] }, effects: [{ kind: "list-sessions" }] };
    }
    case "renamed": {
      const sessions = s.sessions.map((x) => (x.id === a.id ? { ...x, title: a.title } : x));
      return { store: { ...s, sessions }, effects: [{ kind: "list-sessions" }] };
    }
  }
}

/**
 * The open session, when it is blank and may be dropped as the window leaves it for
 * `next`: no title, no message ever (sent, queued or being sent: `touched`), no goal, no
 * plan, nothing running or waiting, not in a worktree (deleting it would leave the worktree
 * behind), and all of it known (listed, its plan read, its log read whole).
 */
export function blankLeft(s: Store, next: string, touched: ReadonlySet<string>): string | null {
  const open = s.open;
  if (!open || open.id === next || touched.has(open.id)) return null;
  const listed = s.sessions.find((x) => x.id === open.id);
  if (!listed || listed.title || listed.queued > 0 || listed.pending_questionnaire || listed.needs_you || listed.worktree) return null;
  if (open.messaged || open.goal || open.pending || open.running || open.streaming || open.partial || open.behind !== null) return null;
  if (open.items.some((it) => it.kind !== "chip")) return null;
  const plan = s.plan.view;
  if (!plan || open.mode === "plan" || plan.revisions.length > 0 || (plan.plans?.length ?? 0) > 0 || (plan.markdown ?? "").trim() !== "") return null;
  return open.id;
}

/** A live event: the session list may change for any session; the rest only for the open one. */
function onEvent(s: Store, e: WireEvent): Step {
  const effects: Effect[] = listChanged(s, e) ? [{ kind: "list-sessions" }] : [];
  const open = s.open;
  if (!open || e.session_id !== open.id) return { store: s, effects };
  const where = placement(open, e);
  const next = applyEvent(open, e);
  if (next === open) return { store: s, effects };
  let store: Store = { ...s, open: next };
  if (where === "next" || where === "transient") {
    const step = follow(store, open, e);
    store = step.store;
    effects.push(...step.effects);
  }
  // Ask for the log once, when the gap is first seen (not again for each later event).
  if (open.behind === null) effects.push(...catchUp(next));
  return { store, effects };
}

/** Logged events read after a gap; more is asked for while the gap is not closed. */
function onLog(s: Store, id: string, events: WireEvent[]): Step {
  if (!s.open || s.open.id !== id) return { store: s, effects: [] };
  let store = s;
  const effects: Effect[] = [];
  for (const e of events) {
    const before = store.open;
    if (!before) break;
    const open = applyLogged(before, e);
    if (open === before) continue;
    store = { ...store, open };
    if (open.lastSeq === e.seq && before.lastSeq !== e.seq) {
      const step = follow(store, before, e);
      store = step.store;
      effects.push(...step.effects);
    }
  }
  const open = store.open;
  if (open && open.behind !== null) {
    // Nothing new in the log means the gap cannot be closed by reading it: stop asking, the
    // next live event past `lastSeq` opens it again.
    if (events.length === 0) store = { ...store, open: { ...open, behind: null } };
    else effects.push(...catchUp(open));
  }
  return { store, effects: dedupe(effects) };
}

/** What an applied event changes beside the transcript: goal timeline, plan, open tab. */
function follow(s: Store, before: SessionState, e: WireEvent): Step {
  const effects: Effect[] = [];
  let { goalEvents, panel, plan } = s;
  switch (e.type) {
    case "goal.create":
      goalEvents = [...goalEvents, e];
      panel = "goal";
      break;
    case "goal.update":
    case "goal.clear":
      goalEvents = [...goalEvents, e];
      break;
    case "turn.finished":
      if (before.goal) goalEvents = [...goalEvents, e];
      break;
    case "plan.revision": {
      const revision = { plan_id: e.plan_id, version: e.version, sha256: e.sha256, bytes: e.bytes, author: e.author, truncated: e.truncated ?? false, created_at: e.ts };
      const known = plan.view?.revisions.some((r) => r.plan_id === e.plan_id && r.version === e.version);
      if (plan.view && !known) plan = { ...plan, view: { ...plan.view, revisions: [...plan.view.revisions, revision] } };
      // A new revision under review moves what approving implements.
      if (before.pending?.question.kind === "plan_approval") effects.push({ kind: "load-plan", id: e.session_id });
      break;
    }
    case "plan.mode_changed":
      effects.push({ kind: "load-plan", id: e.session_id });
      break;
    case "questionnaire.opened":
      if (e.question.kind === "plan_approval") {
        panel = "plan";
        effects.push({ kind: "load-plan", id: e.session_id });
      }
      break;
    case "questionnaire.answered":
      if (e.kind === "plan_approval") effects.push({ kind: "load-plan", id: e.session_id });
      break;
    case "questionnaire.updated":
      // The review moved to another revision: the tab reads it anew.
      if (e.question.kind === "plan_approval") effects.push({ kind: "load-plan", id: e.session_id });
      break;
    default:
      break;
  }
  return { store: { ...s, goalEvents, panel, plan }, effects };
}

function isRevision(r: { plan_id: string; version: number }, review: { plan_id: string; version: number }): boolean {
  return r.plan_id === review.plan_id && r.version === review.version;
}

/** Events that change how a session is listed (title, badges, order). */
function listChanged(s: Store, e: WireEvent): boolean {
  if (!s.sessions.some((x) => x.id === e.session_id)) return true;
  // What the list shows of a session: its title and mode, its model, and whether it needs
  // the user (a question, a review, a goal blocked or paused).
  const shown: WireEvent["type"][] = ["questionnaire.opened", "questionnaire.answered", "plan.mode_changed", "session.idle", "session.waiting", "session.configured", "goal.create", "goal.update", "goal.clear"];
  return shown.includes(e.type);
}

function catchUp(open: SessionState): Effect[] {
  const after = catchUpAfter(open);
  return after === null ? [] : [{ kind: "read-log", id: open.id, after }];
}

/** Two lists of logged events as one, oldest first, each `seq` once. */
function mergeBySeq(a: WireEvent[], b: WireEvent[]): WireEvent[] {
  const bySeq = new Map<number, WireEvent>();
  for (const e of [...a, ...b]) bySeq.set(e.seq, e);
  return [...bySeq.values()].sort((x, y) => x.seq - y.seq);
}

function dedupe(effects: Effect[]): Effect[] {
  const seen = new Set<string>();
  return effects.filter((f) => {
    const k = JSON.stringify(f);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
