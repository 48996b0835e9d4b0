import { describe, expect, it, vi } from "vitest";
import type { SessionView, WireEvent } from "./types";

const S = "s1";
const said = (seq: number, text: string) => ({ session_id: S, seq, ts: seq, transient: false, type: "message.admitted", message_id: seq, source: "user", text, position: "tail" }) as unknown as WireEvent;
const summary = { id: S, workspace: "/w", title: null, created_at: 0, updated_at: 0, interaction_mode: "default" as const, permission_mode: "ask" as const, model: null, queued: 0, pending_questionnaire: null };
const usage = { input_tokens: 0, output_tokens: 0, cached_tokens: 0 };
const view: SessionView = { snapshot: { summary, session_dir: "/d", messages: [], questionnaires: [], turns: 0, usage, spend: { micros: 0, unpriced_calls: 0 }, cost_usd: 0, last_seq: 2 }, events: [said(1, "one"), said(2, "two")], complete: true, goal: null, goal_queue: [], instructions: [] };
const log = [said(3, "three"), said(4, "four"), said(5, "five")];

// The app, as far as the store's wrapper sees it: commands answer from the data above, and
// the session-event listener is kept so the test can push events.
const app = vi.hoisted(() => ({ push: (_e: unknown) => {}, calls: [] as string[], more: [] as string[] }));
vi.mock("../bindings", () => {
  const ok = <T,>(data: T) => Promise.resolve({ status: "ok" as const, data });
  const listen = () => Promise.resolve(() => {});
  return {
    commands: {
      listSessions: () => ok([summary, ...app.more.map((id) => ({ ...summary, id }))]),
      openSession: (id: string) => (app.calls.push(`open ${id}`), ok(view)),
      sessionEvents: (id: string, after: number) => (app.calls.push(`events ${id} after ${after}`), ok(log.filter((e) => e.seq > after))),
      planView: () => ok({ path: "/p", markdown: null, html: "", revisions: [], review: null }),
      goalTimeline: () => ok([]),
    },
    events: {
      sessionEvent: { listen: (cb: (e: { payload: unknown }) => void) => ((app.push = (p) => cb({ payload: p })), listen()) },
      planFileChanged: { listen },
      focusSession: { listen },
      alertRaised: { listen },
    },
  };
});

const { createLive } = await import("./live.svelte");

describe("live store", () => {
  it("reads the log after a gap instead of reopening the session", async () => {
    const live = createLive(() => {});
    const stop = live.connect();
    await live.start();
    expect(live.store.open?.lastSeq).toBe(2);

    app.push(said(5, "five")); // 3 and 4 were missed
    await vi.waitFor(() => expect(live.store.open?.lastSeq).toBe(5));
    const texts = live.store.open?.items.map((i) => (i.kind === "user" ? i.text : i.kind));
    expect(texts).toEqual(["one", "two", "three", "four", "five"]);
    expect(app.calls).toEqual([`open ${S}`, `events ${S} after 2`]);
    stop();
  });

  it("opens a session once when it is asked for again while it opens", async () => {
    app.calls.length = 0;
    const live = createLive(() => {});
    // The newest session at start, and a click on it before that open has answered.
    await Promise.all([live.start(), live.open(S)]);
    expect(app.calls.filter((c) => c.startsWith("open"))).toEqual([`open ${S}`]);
    expect(live.store.open?.id).toBe(S);
  });

  it("opens the session open when the window last closed, while it is still listed", async () => {
    app.more = ["older"];
    app.calls.length = 0;
    const opened: string[] = [];
    await createLive(() => {}, (id) => opened.push(id)).start("older");
    // Gone since (deleted, or another data folder): the newest instead.
    await createLive(() => {}, (id) => opened.push(id)).start("gone");
    expect(app.calls).toEqual(["open older", `open ${S}`]);
    expect(opened).toEqual(["older", S]);
    app.more = [];
  });
});
