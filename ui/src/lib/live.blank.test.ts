import { beforeEach, describe, expect, it, vi } from "vitest";
import type { SessionSummary } from "./types";

// Three sessions: "blank" (nothing ever sent, no title), "said" (a message) and "named"
// (a title, no message). What the window deletes and renames is recorded; as the app does,
// a rename keeps the session's activity time.
// The app decides blankness itself: ids in `filled` got a message the window never saw.
const app = vi.hoisted(() => ({ deleted: [] as string[], renamed: {} as Record<string, string>, filled: [] as string[] }));
vi.mock("../bindings", () => {
  const ok = <T,>(data: T) => Promise.resolve({ status: "ok" as const, data });
  const listen = () => Promise.resolve(() => {});
  const summary = (id: string, title: string | null, updated_at: number) => ({ id, workspace: "/w", title, created_at: 0, updated_at, interaction_mode: "default", permission_mode: "ask", model: null, queued: 0, pending_questionnaire: null });
  const usage = { input_tokens: 0, output_tokens: 0, cached_tokens: 0 };
  const said = { session_id: "said", seq: 1, ts: 1, transient: false, type: "message.admitted", message_id: 1, source: "user", text: "hi", position: "tail" };
  const events: Record<string, unknown[]> = { blank: [], said: [said], named: [] };
  const sessions = () =>
    [summary("blank", null, 300), summary("said", null, 200), summary("named", "Notes", 100)]
      .filter((s) => !app.deleted.includes(s.id))
      .map((s) => (app.renamed[s.id] ? { ...s, title: app.renamed[s.id] } : s))
      .sort((a, b) => b.updated_at - a.updated_at);
  const view = (id: string) => {
    const evs = events[id] ?? [];
    return { snapshot: { summary: sessions().find((s) => s.id === id), session_dir: "/d", messages: [], questionnaires: [], turns: 0, usage, spend: { micros: 0, unpriced_calls: 0 }, cost_usd: 0, last_seq: evs.length }, events: evs, complete: true, goal: null, goal_queue: [], instructions: [] };
  };
  return {
    commands: {
      listSessions: () => ok(sessions()),
      openSession: (id: string) => ok(view(id)),
      planView: () => ok({ path: "/p", markdown: null, html: "", revisions: [], review: null, plans: [], comments: [] }),
      goalTimeline: () => ok([]),
      deleteSession: (id: string) => Promise.reject(new Error(`deleteSession(${id}) is the user's delete; leaving a session must not call it`)),
      dropBlankSession: (id: string) => (app.filled.includes(id) ? ok(false) : (app.deleted.push(id), ok(true))),
      renameSession: (id: string, title: string) => ((app.renamed[id] = title), ok(null)),
      submit: () => ok({ kind: "queued" }),
    },
    events: { sessionEvent: { listen }, planFileChanged: { listen }, focusSession: { listen }, alertRaised: { listen } },
  };
});

const { createLive } = await import("./live.svelte");

/** The window with `id` open, its plan read and the list in. */
async function openOn(id: string) {
  const live = createLive(() => {});
  await live.start(id);
  await vi.waitFor(() => expect(live.store.plan.view).not.toBeNull());
  return live;
}
const ids = (list: SessionSummary[]) => list.map((s) => s.id);

beforeEach(() => {
  app.deleted = [];
  app.renamed = {};
  app.filled = [];
});

describe("leaving a session", () => {
  it("deletes it when it has no title and nothing was ever sent", async () => {
    const live = await openOn("blank");
    await live.open("said");
    await vi.waitFor(() => expect(app.deleted).toEqual(["blank"]));
    expect(live.store.open?.id).toBe("said");
    expect(ids(live.store.sessions)).not.toContain("blank");
  });

  it("keeps one with a message, or with a title", async () => {
    const said = await openOn("said");
    await said.open("named");
    const named = await openOn("named");
    await named.open("said");
    await new Promise((go) => setTimeout(go, 50));
    expect(app.deleted).toEqual([]);
  });

  it("keeps a blank one something was just sent to, or that was just renamed", async () => {
    const sent = await openOn("blank");
    await sent.send("hello", null);
    await sent.open("said");
    const renamed = await openOn("blank");
    await renamed.rename("blank", "Ideas");
    await renamed.open("said");
    await new Promise((go) => setTimeout(go, 50));
    expect(app.deleted).toEqual([]);
    expect(Object.keys(app.renamed)).toEqual(["blank"]);
  });

  it("keeps it listed when the app finds it no longer blank", async () => {
    app.filled = ["blank"];
    const live = await openOn("blank");
    await live.open("said");
    await new Promise((go) => setTimeout(go, 50));
    expect(app.deleted).toEqual([]);
    expect(ids(live.store.sessions)).toContain("blank");
  });

  it("keeps it when it is opened again", async () => {
    const live = await openOn("blank");
    await live.open("blank");
    await new Promise((go) => setTimeout(go, 50));
    expect(app.deleted).toEqual([]);
  });
});

describe("renaming", () => {
  it("leaves the session where it stands in the list", async () => {
    const live = await openOn("said");
    expect(ids(live.store.sessions)).toEqual(["blank", "said", "named"]);
    await live.rename("named", "Notes, kept");
    expect(live.store.sessions.find((s) => s.id === "named")?.title).toBe("Notes, kept");
    // The app lists it again, with its new title, where it was.
    await vi.waitFor(() => expect(app.renamed).toEqual({ named: "Notes, kept" }));
    await new Promise((go) => setTimeout(go, 50));
    expect(ids(live.store.sessions)).toEqual(["blank", "said", "named"]);
    expect(live.store.sessions.find((s) => s.id === "named")?.title).toBe("Notes, kept");
  });
});
