// Keeps the store (`store.ts`) live: feeds it the app's typed events and command results,
// and runs the fetches it asks for. The only module here that talks to the app.
import { commands, events } from "../bindings";
import type { BudgetChange, ImageInput, Intent, PermissionMode, RewindScope } from "../bindings";
import { blankLeft, emptyStore, reduce, type Action, type Effect, type Panel } from "./store";
import { foldLog, type SessionState } from "./session";
import { scrubCli } from "./slash";

/** Events applied between two paints while a long session's older part is read. */
const HISTORY_PIECE = 1000;
import type { Answer, GoalDraft, GoalOp, IpcError, WireEvent } from "./types";

/** Shows a note: plain text, or a command's error (which may name a setting to go to). */
export type Notify = (what: string | IpcError, tone?: "error" | "info") => void;

/** A session being opened, the events that arrived meanwhile, and the open itself. */
type Opening = { id: string; early: WireEvent[]; done: Promise<void> };

/** `onopened`: a session was opened in the window (its id). */
export function createLive(notify: Notify, onopened: (id: string) => void = () => {}) {
  // Replaced whole by each reduction, never mutated: no deep proxy over long transcripts.
  let store = $state.raw(emptyStore());
  /** How many session events have arrived (the goal board reads its rows again on each). */
  let events_seen = $state(0);
  /** The session being opened, and its events that arrive before its view does. */
  let opening: Opening | null = null;
  let listTimer: ReturnType<typeof setTimeout> | null = null;
  /** Sessions something was sent to, or a goal or title given, from this window: kept
   *  when left even before the app's events say so. */
  const touched = new Set<string>();

  function dispatch(a: Action) {
    const step = reduce(store, a);
    store = step.store;
    for (const f of step.effects) run(f);
  }

  function run(f: Effect) {
    switch (f.kind) {
      case "list-sessions":
        listSoon();
        return;
      case "load-plan":
        commands.planView(f.id).then((r) => {
          if (r.status === "ok") dispatch({ kind: "plan", id: f.id, view: r.data });
        });
        return;
      case "load-revision":
        commands.planRevision(f.id, f.planId, f.version).then((r) => {
          if (r.status === "ok") dispatch({ kind: "submitted", id: f.id, revision: r.data });
          else notify(r.error);
        });
        return;
      case "load-goal-events":
        commands.goalTimeline(f.id).then((r) => {
          if (r.status === "ok") dispatch({ kind: "goal-events", id: f.id, events: r.data });
        });
        return;
      case "load-history":
        void loadHistory(f.id);
        return;
      case "read-log":
        commands.sessionEvents(f.id, f.after).then((r) => {
          if (r.status === "ok") dispatch({ kind: "log", id: f.id, events: r.data });
          // The log cannot be read: start over from a fresh view of the session.
          else if (store.open?.id === f.id) open(f.id);
        });
        return;
    }
  }

  /** Changes the open session with `change`: null when done, else why not (for the
   *  control that asked to say; no toast repeats it). */
  async function switchOpen(change: (id: string) => Promise<{ status: "ok" } | { status: "error"; error: IpcError }>): Promise<string | null> {
    const id = store.open?.id;
    if (!id) return "no session is open";
    const r = await change(id);
    if (r.status === "error") return r.error.message;
    listSoon();
    return null;
  }

  /** Reads the log of the open session from its start and applies it a piece at a time,
   *  letting the window paint and answer between pieces; unread, the session stays on its
   *  newest part (said at the transcript's top). */
  async function loadHistory(id: string) {
    const r = await commands.sessionEvents(id, 0);
    const events = r.status === "ok" ? r.data : [];
    let folded: SessionState | null = null;
    for (let i = 0; i < events.length; i += HISTORY_PIECE) {
      folded = foldLog(folded, id, events.slice(i, i + HISTORY_PIECE));
      await new Promise((go) => setTimeout(go, 0));
      if (store.open?.id !== id) return;
    }
    dispatch({ kind: "history", id, folded: folded ?? foldLog(null, id, []) });
  }

  /** Refreshes the session list, once for a burst of events. */
  function listSoon() {
    if (listTimer) return;
    listTimer = setTimeout(async () => {
      listTimer = null;
      const r = await commands.listSessions();
      if (r.status === "error") return;
      dispatch({ kind: "listed", sessions: r.data });
      if (!store.open && opening === null && r.data.length) open(r.data[0].id);
    }, 150);
  }

  function open(id: string): Promise<void> {
    // Asked again while it is opening (the first session at start, then a click): one open.
    if (opening?.id === id) return opening.done;
    const mine: Opening = { id, early: [], done: Promise.resolve() };
    mine.done = openNow(mine);
    opening = mine;
    return mine.done;
  }

  async function openNow(mine: Opening) {
    const r = await commands.openSession(mine.id);
    if (opening !== mine) return; // another session was asked for meanwhile
    opening = null;
    if (r.status === "error") {
      notify(r.error);
      return;
    }
    // A session left blank (nothing ever sent, no title) is not kept once left.
    const blank = blankLeft(store, mine.id, touched);
    dispatch({ kind: "opened", view: r.data });
    if (blank) void dropBlank(blank);
    // Those the view already holds are skipped by `seq`; the rest follow on from it.
    for (const event of mine.early) dispatch({ kind: "event", event });
    onopened(mine.id);
  }

  /** Deletes a blank session the window left, if the app finds it still blank; else (or if
   *  the app refuses) it simply stays. */
  async function dropBlank(id: string) {
    const r = await commands.dropBlankSession(id);
    if (r.status === "ok" && r.data) dispatch({ kind: "deleted", id });
  }

  function onEvent(event: WireEvent) {
    if (opening?.id === event.session_id) opening.early.push(event);
    dispatch({ kind: "event", event });
    if (!event.transient || event.type === "goal.updated") events_seen++;
  }

  return {
    get store() {
      return store;
    },
    get eventsSeen() {
      return events_seen;
    },
    open,

    /** Lists the sessions and opens one: `prefer` (the one open when the window last
     *  closed; it may still be being read, so the list is asked for at once) while it is
     *  still listed, else the newest. */
    async start(prefer: string | null | Promise<string | null> = null) {
      const [r, wanted] = await Promise.all([commands.listSessions(), prefer]);
      if (r.status === "error") {
        notify(r.error);
        return;
      }
      dispatch({ kind: "listed", sessions: r.data });
      // A session the user opened meanwhile stays open.
      if (store.open || opening) return;
      if (r.data.length) await open(r.data.find((s) => s.id === wanted)?.id ?? r.data[0].id);
    },

    /** Subscribes to the app's events; returns the unsubscribe. */
    connect(): () => void {
      const subs = [
        events.sessionEvent.listen((e) => onEvent(e.payload)),
        events.planFileChanged.listen((e) => dispatch({ kind: "plan-file", change: e.payload })),
        events.focusSession.listen((e) => open(e.payload.session_id)),
        events.alertRaised.listen((e) => notify(`${e.payload.title}: ${e.payload.body}`, "info")),
      ];
      return () => subs.forEach((p) => p.then((un) => un()));
    },

    /** Switches the open session's model (from its next model call). */
    setModel: (model: string) => switchOpen((id) => commands.setModel(id, model)),
    /** Switches the open session's permission mode (from its next tool call). */
    setMode: (mode: PermissionMode) => switchOpen((id) => commands.setPermissionMode(id, mode)),

    /** Gives a session a new title; false (and a note) when it was refused. The list
     *  keeps its order: a new title is not activity. */
    async rename(id: string, title: string): Promise<boolean> {
      touched.add(id);
      const r = await commands.renameSession(id, title);
      if (r.status === "error") {
        notify(r.error);
        return false;
      }
      dispatch({ kind: "renamed", id, title: title.trim() });
      return true;
    },

    /** Deletes a session and its data (the window has asked the user). */
    async remove(id: string) {
      const r = await commands.deleteSession(id);
      if (r.status === "error") notify(r.error);
      else dispatch({ kind: "deleted", id });
    },

    async create(workspace: string) {
      const r = await commands.createSession(workspace, null, null);
      if (r.status === "error") notify(r.error);
      else {
        listSoon();
        await open(r.data.snapshot.summary.id);
      }
    },

    /** A session in a new git worktree of `workspace`'s project ("Run in a new worktree"). */
    async createInWorktree(workspace: string) {
      const r = await commands.createWorktreeSession(workspace, null);
      if (r.status === "error") notify(r.error);
      else {
        listSoon();
        await open(r.data.snapshot.summary.id);
      }
    },

    /** "Approve & pursue as goal" with "Run in a new worktree": the plan under review in
     *  the open session is implemented by a new session in a new worktree, which opens;
     *  false when refused (said). */
    async approveInWorktree(option: number | null, asGoal: BudgetChange): Promise<boolean> {
      const from = store.open;
      if (!from?.pending) return false;
      const r = await commands.approveInWorktree(from.id, from.pending.id, option, asGoal, null);
      if (r.status === "error") {
        notify(r.error);
        return false;
      }
      listSoon();
      await open(r.data.snapshot.summary.id);
      return true;
    },

    /** Rewinds the open session to `checkpoint`; the app's refusal, or null. */
    async rewind(checkpoint: string, scope: RewindScope): Promise<IpcError | null> {
      const id = store.open?.id;
      if (!id) return null;
      const r = await commands.rewind(id, checkpoint, scope);
      return r.status === "error" ? r.error : null;
    },

    /** Answers a blocked goal's question from the board (the session opens here if it is
     *  not); false when refused (said). */
    async boardReply(id: string, text: string): Promise<boolean> {
      const r = await commands.boardReply(id, text);
      if (r.status === "error") notify(r.error);
      return r.status === "ok";
    },

    /** Changes a board row's goal or queue (the session opens here if it is not). */
    async boardGoal(id: string, op: GoalOp): Promise<boolean> {
      touched.add(id);
      const r = await commands.boardGoal(id, op);
      if (r.status === "error") notify(r.error);
      return r.status === "ok";
    },

    async startDemo() {
      const r = await commands.startDemo();
      if (r.status === "error") notify(r.error);
      else {
        listSoon();
        // The newest (the goal demo), which heads the list.
        const newest = r.data.at(-1);
        if (newest) await open(newest);
      }
    },

    /** Sends a message to the open session; false when it was not accepted. */
    async send(text: string, intent: Intent | null, images: ImageInput[] = []): Promise<boolean> {
      const id = store.open?.id;
      if (!id) return false;
      touched.add(id);
      const r = await commands.submit(id, text, intent, crypto.randomUUID(), images);
      if (r.status === "error") {
        // A command's refusal is written for the terminal too: said in the window's words.
        notify(text.startsWith("/") ? { ...r.error, message: scrubCli(r.error.message) } : r.error);
        return false;
      }
      // What a command said is in the transcript (its `command.output`): no toast repeats it.
      return true;
    },

    /** "Review again" after "Not now": the put-off review opens again, with no model turn. */
    async reviewAgain(): Promise<boolean> {
      const id = store.open?.id;
      if (!id) return false;
      const r = await commands.reviewPlanAgain(id);
      if (r.status === "error") notify(r.error);
      return r.status === "ok";
    },

    /** Answers the open session's questionnaire; false when the app refused (said). */
    async answer(a: Answer): Promise<boolean> {
      const open = store.open;
      if (!open?.pending) return false;
      const r = await commands.answer(open.id, open.pending.id, a);
      if (r.status === "error") notify(r.error);
      return r.status === "ok";
    },

    /** Answers the open session's questionnaire and gives back the app's refusal, or null:
     *  the form that asked says it beside its fields (a server's form, whose values the
     *  runtime checks). */
    async answerForm(a: Answer): Promise<IpcError | null> {
      const open = store.open;
      if (!open?.pending) return null;
      const r = await commands.answer(open.id, open.pending.id, a);
      return r.status === "error" ? r.error : null;
    },

    /** Changes the open session's goal; false when the app refused. The Goal tab follows
     *  the change from the session's events, so what the app says back is not shown. */
    async goal(op: GoalOp): Promise<boolean> {
      const id = store.open?.id;
      if (!id) return false;
      touched.add(id);
      const r = await commands.goal(id, op);
      if (r.status === "error") notify(r.error);
      return r.status === "ok";
    },

    /** Drafts a goal from rough words (one model call; nothing is set). */
    async draftGoal(text: string): Promise<{ draft: GoalDraft } | { error: string }> {
      const id = store.open?.id;
      if (!id) return { error: "no session is open" };
      const r = await commands.draftGoal(id, text);
      return r.status === "ok" ? { draft: r.data } : { error: r.error.message };
    },

    /** Reads goal-form text with the app's `/goal` grammar. */
    async parseGoal(text: string): Promise<{ op: GoalOp } | { error: string }> {
      const r = await commands.parseGoal(text);
      return r.status === "ok" ? { op: r.data } : { error: r.error.message };
    },

    stop() {
      if (store.open) commands.stop(store.open.id);
    },

    show(panel: Panel) {
      dispatch({ kind: "panel", panel });
    },
  };
}

export type Live = ReturnType<typeof createLive>;
