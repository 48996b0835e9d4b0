import { afterEach, describe, expect, it, vi } from "vitest";

// The app's two commands as it serves them: known keys only, kept in a map here.
const app = vi.hoisted(() => ({ asked: [] as string[], data: new Map<string, unknown>() }));
vi.mock("../bindings", () => {
  const known = ["comment-drafts", "panel-widths", "last-session", "dismissed-banners"];
  const refused = (k: string) => ({ status: "error", error: { code: "refused", message: `the window keeps no \`${k}\`` } });
  return {
    commands: {
      uiStateGet: async (k: string) => {
        app.asked.push(k);
        return known.includes(k) ? { status: "ok", data: app.data.get(k) ?? null } : refused(k);
      },
      uiStateSet: async (k: string, v: unknown) => {
        if (!known.includes(k)) return refused(k);
        app.data.set(k, v);
        return { status: "ok", data: null };
      },
    },
  };
});

const { CENTER_MIN, connectUiState, DRAFTS_BYTES, fitWidths, MAX_DRAFTED, memoryKeyValue, UiState, uiState, WIDTH_LIMITS } = await import("./uistate");
type KeyValue = import("./uistate").KeyValue;
const inApp = (on: boolean) => ((globalThis as { isTauri?: boolean }).isTauri = on);
afterEach(() => inApp(false));

const draft = { start: 5, end: 5, text: "why?", quote: "1. Wrap the call" };

/** Local storage as the page had it before the store. */
function oldStorage(entries: Record<string, string>) {
  const m = new Map(Object.entries(entries));
  return {
    m,
    get length() {
      return m.size;
    },
    key: (i: number) => [...m.keys()][i] ?? null,
    getItem: (k: string) => m.get(k) ?? null,
    removeItem: (k: string) => void m.delete(k),
  };
}

describe("window state", () => {
  it("comes back from the store after a restart: drafts, widths, last session, banners", async () => {
    const kv = memoryKeyValue();
    const before = new UiState(kv);
    before.setDrafts("p1", 2, [draft]);
    before.setWidths({ left: 300, right: 520 });
    before.setLastSession("s2");
    before.dismiss("demo");
    await before.saved();

    const after = new UiState(kv);
    await after.load();
    expect(after.drafts("p1", 2)).toEqual([draft]);
    expect(after.drafts("p1", 3)).toEqual([]);
    expect(after.widths()).toEqual({ left: 300, right: 520 });
    expect(after.lastSession()).toBe("s2");
    expect(after.isDismissed("demo")).toBe(true);
    expect(after.isDismissed("other")).toBe(false);

    // Drafts sent (emptied) are gone from the store.
    after.setDrafts("p1", 2, []);
    await after.saved();
    expect(kv.data.get("comment-drafts")).toEqual({});
  });

  it("reads only draft keys of its own shape and drafts of a sound shape, long ones too", async () => {
    const kv = memoryKeyValue();
    const list = [draft];
    kv.data.set("comment-drafts", {
      constructor: list,
      toString: list,
      "p1:v1": [draft, { ...draft, start: 0 }, { ...draft, start: 3, end: 2 }, { ...draft, start: 1.5 }, { ...draft, text: "   " }, { ...draft, text: "x".repeat(4001) }, { ...draft, start: 1, end: 201 }],
    });
    kv.data.set("panel-widths", { left: 300, right: 520 });
    const s = new UiState(kv);
    await s.load();
    // A draft too long for the review is kept to be shortened, never dropped.
    expect(s.drafts("p1", 1)).toEqual([draft, { ...draft, text: "x".repeat(4001) }, { ...draft, start: 1, end: 201 }]);
    expect(s.widths()).toEqual({ left: 300, right: 520 });
    s.setDrafts("p2", 1, [draft]);
    await s.saved();
    // What it does not read is written back as it was, never assigned to its own state.
    const stored = kv.data.get("comment-drafts") as Record<string, unknown>;
    expect(Object.keys(stored).sort()).toEqual(["constructor", "p1:v1", "p2:v1", "toString"]);
    expect(stored.constructor).toEqual(list);
  });

  it("never writes over drafts it could not read", async () => {
    const kv = memoryKeyValue();
    kv.data.set("comment-drafts", { "p1:v1": [draft] });
    const failing = { ...kv, get: async (k: string) => (k === "comment-drafts" ? Promise.reject(new Error("busy")) : kv.get(k)) };
    const s = new UiState(failing);
    await s.load();
    s.setDrafts("p2", 1, [draft]);
    await s.saved();
    expect(s.drafts("p2", 1)).toEqual([draft]);
    expect(kv.data.get("comment-drafts")).toEqual({ "p1:v1": [draft] });
  });

  it("ignores what is not its own: broken drafts, widths out of range, wrong types", async () => {
    const kv = memoryKeyValue();
    kv.data.set("comment-drafts", { "p1:v1": [{ start: "x" }, draft], "p1:v2": "nope" });
    kv.data.set("panel-widths", { left: 5, right: 99_999 });
    kv.data.set("last-session", 42);
    kv.data.set("dismissed-banners", ["demo", 7]);
    const s = new UiState(kv);
    await s.load();
    expect(s.drafts("p1", 1)).toEqual([draft]);
    expect(s.drafts("p1", 2)).toEqual([]);
    expect(s.widths()).toEqual({ left: WIDTH_LIMITS.left.min, right: WIDTH_LIMITS.right.max });
    expect(s.lastSession()).toBeNull();
    expect(s.isDismissed("demo")).toBe(true);

    kv.data.set("panel-widths", "wide");
    await s.load();
    expect(s.widths()).toBeNull();
  });

  it("narrows the side columns to fit a narrow window, the right one first", () => {
    const wide = { left: 400, right: 600 };
    expect(fitWidths(wide, 1500)).toEqual(wide);
    expect(fitWidths(wide, 1400)).toEqual({ left: 400, right: 1400 - 400 - CENTER_MIN });
    expect(fitWidths(wide, 1100)).toEqual({ left: 1100 - WIDTH_LIMITS.right.min - CENTER_MIN, right: WIDTH_LIMITS.right.min });
    expect(fitWidths(wide, 500)).toEqual({ left: WIDTH_LIMITS.left.min, right: WIDTH_LIMITS.right.min });
    // Settings, or the side panel as a drawer: only the session list gives way, and at
    // 900 px the transcript keeps its 480.
    expect(fitWidths(wide, 800, 1)).toEqual({ left: 800 - CENTER_MIN, right: 600 });
    expect(900 - fitWidths({ left: WIDTH_LIMITS.left.max, right: 600 }, 900, 1).left).toBeGreaterThanOrEqual(480);
  });

  it("writes in order, so a slow first write cannot overwrite a later one", async () => {
    const landed: unknown[] = [];
    let release = () => {};
    const slow = new Promise<void>((r) => (release = r));
    let first = true;
    const kv: KeyValue = {
      get: async () => undefined,
      set: async (_k, v) => {
        if (first) {
          first = false;
          await slow;
        }
        landed.push(v);
      },
    };
    const s = new UiState(kv);
    s.setLastSession("a");
    await Promise.resolve(); // the first write has started, and waits on the disk
    s.setLastSession("b");
    release();
    await s.saved();
    expect(landed).toEqual(["a", "b"]);
  });

  it("keeps which side columns were closed with their widths, and reads them back", async () => {
    const kv = memoryKeyValue();
    const s = new UiState(kv);
    expect(s.panels()).toEqual({ left: true, right: true });
    s.setWidths({ left: 300, right: 500 });
    s.setPanels({ left: false, right: true });
    await s.saved();
    expect(kv.data.get("panel-widths")).toEqual({ left: 300, right: 500, hidden: { left: true, right: false } });
    const again = new UiState(kv);
    await again.load();
    expect(again.panels()).toEqual({ left: false, right: true });
    expect(again.widths()).toEqual({ left: 300, right: 500 });
    kv.data.set("panel-widths", { left: 300, right: 500, hidden: "yes" });
    await again.load();
    expect(again.panels()).toEqual({ left: true, right: true });
  });

  it("makes one write of a burst of changes, with the newest value", async () => {
    const kv = memoryKeyValue();
    const sets: unknown[] = [];
    const counting: KeyValue = { get: kv.get, set: async (k, v) => void (sets.push(v), await kv.set(k, v)) };
    const s = new UiState(counting);
    for (let w = 300; w < 340; w++) s.setWidths({ left: w, right: 400 });
    await s.saved();
    const hidden = { left: false, right: false };
    expect(sets).toEqual([{ left: 339, right: 400, hidden }]);
    expect(kv.data.get("panel-widths")).toEqual({ left: 339, right: 400, hidden });
  });

  it("tells the window when a value could not be kept, naming what", async () => {
    const refusing: KeyValue = { get: async () => undefined, set: async () => Promise.reject(new Error("the disk is full")) };
    const s = new UiState(refusing);
    const told: string[] = [];
    s.onFailure = (what, why) => told.push(`${what}: ${why}`);
    s.setDrafts("p1", 1, [draft]);
    s.setLastSession("s1");
    await s.saved();
    expect(told).toEqual(["Comment drafts: the disk is full", "The open session: the disk is full"]);
    // Still kept in memory for this window's life.
    expect(s.drafts("p1", 1)).toEqual([draft]);
  });

  it("drops drafts on revisions past review, and keeps the newest revisions only", async () => {
    const kv = memoryKeyValue();
    const s = new UiState(kv);
    s.setDrafts("p1", 1, [draft]);
    s.setDrafts("p2", 1, [draft]);
    s.setDrafts("p1", 2, [{ ...draft, text: "on v2" }]);
    await s.saved();
    // v1 of p1 was superseded by v2; p2 is another plan.
    expect(Object.keys(kv.data.get("comment-drafts") as object)).toEqual(["p2:v1", "p1:v2"]);
    for (let i = 0; i < MAX_DRAFTED + 5; i++) s.setDrafts(`q${i}`, 1, [draft]);
    await s.saved();
    const keys = Object.keys(kv.data.get("comment-drafts") as object);
    expect(keys.length).toBe(MAX_DRAFTED);
    expect(keys[0]).toBe("q5:v1");
    expect(keys.at(-1)).toBe(`q${MAX_DRAFTED + 4}:v1`);
    // Long drafts: the oldest revisions go until the rest fit what the app keeps.
    const long = { ...draft, text: "z".repeat(3900) };
    for (let i = 0; i < 40; i++) s.setDrafts(`r${i}`, 1, Array.from({ length: 10 }, () => long));
    await s.saved();
    const stored = kv.data.get("comment-drafts") as Record<string, unknown>;
    expect(JSON.stringify(stored).length).toBeLessThanOrEqual(DRAFTS_BYTES);
    expect(Object.keys(stored).at(-1)).toBe("r39:v1");
  });

  it("goes on writing when the window's listener for failures throws", async () => {
    let fail = true;
    const kv = memoryKeyValue();
    const flaky: KeyValue = { get: kv.get, set: async (k, v) => (fail ? Promise.reject(new Error("busy")) : kv.set(k, v)) };
    const s = new UiState(flaky);
    s.onFailure = () => {
      throw new Error("listener broke");
    };
    s.setLastSession("a");
    await s.saved();
    fail = false;
    s.setLastSession("b");
    await s.saved();
    expect(kv.data.get("last-session")).toBe("b");
  });

  it("takes over the drafts local storage held, and removes them there once stored", async () => {
    const kv = memoryKeyValue();
    kv.data.set("comment-drafts", { "p1:v3": [draft] });
    const old = oldStorage({
      "waymark.comments.p1.v2": JSON.stringify([draft, { start: "bad" }]),
      "waymark.comments.p1.v3": JSON.stringify([{ ...draft, text: "older copy" }]),
      "waymark.comments.p9.v1": "{not json",
      "something.else": "kept",
    });
    const s = new UiState(kv);
    await s.load(old);
    await s.saved();
    expect(s.drafts("p1", 2)).toEqual([draft]);
    expect(s.drafts("p1", 3)).toEqual([draft]); // the store's copy wins
    expect(kv.data.get("comment-drafts")).toEqual({ "p1:v2": [draft], "p1:v3": [draft] });
    expect([...old.m.keys()]).toEqual(["something.else"]);
  });

  it("outside the app stays in memory; in the app it reads and writes through the app's commands", async () => {
    inApp(false);
    expect(await connectUiState()).toBe(uiState);
    expect(app.asked).toEqual([]);
    uiState.setLastSession("in-memory");
    expect(uiState.lastSession()).toBe("in-memory");

    inApp(true);
    app.data.set("last-session", "s7");
    app.data.set("panel-widths", { left: 260, right: 480 });
    await connectUiState();
    // Every key the window reads is one the app accepts (a refused read would drop it).
    expect(app.asked.sort()).toEqual(["comment-drafts", "dismissed-banners", "last-session", "panel-widths"]);
    expect(uiState.lastSession()).toBe("s7");
    expect(uiState.widths()).toEqual({ left: 260, right: 480 });
    uiState.setDrafts("p1", 1, [draft]);
    await uiState.saved();
    expect(app.data.get("comment-drafts")).toEqual({ "p1:v1": [draft] });
  });
});
