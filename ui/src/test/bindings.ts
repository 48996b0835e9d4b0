// A stand-in for the generated bindings, for tests that render the whole app: the commands
// the window calls at start answer with nothing to show, and no event ever comes. A test
// passes what its app does differently, in its `vi.mock("./bindings", ...)` factory.

/** A listener of the app's events, as the bindings have them. */
type Listener = { listen: (cb: (e: { payload: unknown }) => void) => Promise<() => void> };
type EventName = "sessionEvent" | "planFileChanged" | "focusSession" | "alertRaised";

/** A command's success, as the bindings return it. */
export const ok = <T,>(data: T) => Promise.resolve({ status: "ok" as const, data });
/** Starts listening to nothing; the unlisten does nothing. */
export const listen = () => Promise.resolve(() => {});

/** A listener the test sends events through: `keep` gets the function that sends one. */
export function sentBy(keep: (send: (payload: unknown) => void) => void): Listener {
  return { listen: (cb) => (keep((payload) => cb({ payload })), listen()) };
}

export const usage = { input_tokens: 0, output_tokens: 0, cached_tokens: 0 };

const summaryBase = { workspace: "/w", title: "Greet", created_at: 0, updated_at: 0, interaction_mode: "default", permission_mode: "ask", model: null, queued: 0, pending_questionnaire: null };
/** A session as the list shows it: idle, nothing queued, nothing asked. */
export const summary = (id: string, over: Partial<typeof summaryBase> = {}) => ({ id, ...summaryBase, ...over });

/** A session as `openSession` returns it: `events` are the whole log, its newest last. */
export function sessionView(sum: ReturnType<typeof summary> | undefined, events: object[] = [], turns = 0) {
  const snapshot = { summary: sum, session_dir: "/d", messages: [], questionnaires: [], turns, usage, spend: { micros: 0, unpriced_calls: 0 }, cost_usd: 0, last_seq: events.length };
  return { snapshot, events, complete: true, goal: null, goal_queue: [], instructions: [] };
}

/** Logged events of session `id`, all at `ts`, numbered from 1 in the order made. */
export function sessionLog(id: string, ts = 0) {
  let seq = 0;
  const ev = (type: string, body: object) => ({ session_id: id, seq: ++seq, ts, transient: false, type, ...body });
  /** A user's message `text` and turn `n` that answers it and finishes. */
  const turn = (n: number, text: string) => [
    ev("message.admitted", { message_id: n, source: "user", text, position: "tail" }),
    ev("turn.started", { turn_id: n, message_id: n }),
    ev("assistant.message", { turn_id: n, text: `Reply ${n}.`, tool_calls: [], usage }),
    ev("turn.finished", { turn_id: n, reason: "completed", usage, steps: 1 }),
  ];
  return { ev, turn };
}

/** The two-turn session several App tests open: its id, the time its events carry, its
 *  summary and the view `openSession` returns. */
export function twoTurnSession() {
  const id = "s-m1x2k9a100q7wz";
  const at = new Date(2026, 0, 2, 9, 30, 0).getTime();
  const session = summary(id);
  const log = sessionLog(id, at);
  const view = sessionView(session, [...log.turn(1, "Add a greeting"), ...log.turn(2, "Make it say good morning")], 2);
  return { id, at, session, view };
}

export const appInfo = { version: "0", data_dir: "/d", settings_file: "/s", demo: false, settings_error: null };

/** The bindings module: these commands and listeners over the defaults. */
export function mockBindings({ commands = {}, events = {} }: { commands?: Record<string, unknown>; events?: Partial<Record<EventName, Listener>> } = {}) {
  return {
    commands: {
      appInfo: async () => appInfo,
      listSessions: () => ok([]),
      planView: () => ok({ path: "/p", markdown: null, html: "", revisions: [], review: null, plans: [], comments: [] }),
      goalTimeline: () => ok([]),
      mcpPrompts: () => ok([]),
      workspaceFiles: () => ok([]),
      sessionEvents: () => ok([]),
      ...commands,
    },
    events: { sessionEvent: { listen }, planFileChanged: { listen }, focusSession: { listen }, alertRaised: { listen }, ...events },
  };
}
