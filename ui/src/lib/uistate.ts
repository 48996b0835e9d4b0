// The window's own state, kept across restarts: comment drafts, panel widths, the last open
// session, dismissed banners. Not settings: those stay in the settings file the CLI shares.
// In the app it lives in the file the app reads at start (src-tauri/src/ui_state.rs),
// reached through the app's `ui_state_get` / `ui_state_set`, which take only the keys
// below; elsewhere (Vitest, a plain browser) in memory. The rest
// of the UI uses this module only.
import { isTauri } from "@tauri-apps/api/core";
import { commands } from "../bindings";
import type { Draft } from "./comments";

/** Where values are kept: the app's file, or a map. */
export type KeyValue = {
  get(key: string): Promise<unknown>;
  set(key: string, value: unknown): Promise<void>;
};

/** The widths (px) of the session list and of the side panel. */
export type PanelWidths = { left: number; right: number };
export const WIDTH_LIMITS = { left: { min: 180, max: 420, initial: 250 }, right: { min: 300, max: 680, initial: 400 } } as const;

const KEYS = { drafts: "comment-drafts", widths: "panel-widths", lastSession: "last-session", dismissed: "dismissed-banners" } as const;
/** Where drafts were kept before (local storage, one entry per revision). */
const OLD_DRAFT = /^waymark\.comments\.(.+)\.v(\d+)$/;

const draftKey = (planId: string, version: number) => `${planId}:v${version}`;
/** The most revisions whose drafts are kept; past it the oldest go first. */
export const MAX_DRAFTED = 50;
/** The most the drafts may take as JSON, below the app's limit for one key (1 MiB). */
export const DRAFTS_BYTES = 900 * 1024;
/** What a key of the stored drafts looks like (anything else in the file is not read). */
const DRAFT_KEY = /^[\w-]{1,128}:v[1-9]\d{0,8}$/;

/** A draft as the window keeps it: whole line numbers in order and some text. Its size is
 *  not judged here (the review refuses one too long, saying why, and the draft stays to
 *  be shortened): a draft the user wrote is never dropped on the way back from the disk. */
export function isDraft(d: unknown): d is Draft {
  const x = d as Partial<Draft> | null;
  return (
    Number.isSafeInteger(x?.start) &&
    Number.isSafeInteger(x?.end) &&
    typeof x?.text === "string" &&
    typeof x.quote === "string" &&
    (x.start as number) >= 1 &&
    (x.end as number) >= (x.start as number) &&
    x.text.trim().length >= 1
  );
}

type OldStorage = Pick<Storage, "length" | "key" | "getItem" | "removeItem">;

/** A plain copy (of a Svelte state proxy too): later changes do not reach what is queued. */
const plain = (v: unknown): unknown => JSON.parse(JSON.stringify(v));

const clamp = (n: number, lim: { min: number; max: number }) => Math.min(lim.max, Math.max(lim.min, Math.round(n)));

/** Panel widths within their limits; null for anything that is not a pair of numbers. */
export function widthsOf(v: unknown): PanelWidths | null {
  const w = v as Partial<PanelWidths> | null;
  if (typeof w?.left !== "number" || typeof w.right !== "number" || !Number.isFinite(w.left) || !Number.isFinite(w.right)) return null;
  return { left: clamp(w.left, WIDTH_LIMITS.left), right: clamp(w.right, WIDTH_LIMITS.right) };
}

/** The center column keeps at least this much; side columns give way first (right, then left). */
export const CENTER_MIN = 480;
/** Below this window width the side panel is a drawer over the transcript, not a column. */
export const DRAWER_BELOW = 1100;

/** Which side columns the user closed (Ctrl+B, Ctrl+J or their buttons). */
export type PanelsShown = { left: boolean; right: boolean };

/** The widths that fit a window `windowWidth` px wide (the kept widths are not changed). */
export function fitWidths(w: PanelWidths, windowWidth: number, sides: 1 | 2 = 2): PanelWidths {
  let over = w.left + (sides === 2 ? w.right : 0) + CENTER_MIN - windowWidth;
  if (over <= 0) return w;
  let right = w.right;
  if (sides === 2) {
    right = Math.max(WIDTH_LIMITS.right.min, w.right - over);
    over -= w.right - right;
  }
  const left = Math.max(WIDTH_LIMITS.left.min, w.left - Math.max(0, over));
  return { left, right };
}

export function memoryKeyValue(): KeyValue & { data: Map<string, unknown> } {
  const data = new Map<string, unknown>();
  return {
    data,
    get: async (k) => data.get(k),
    set: async (k, v) => void data.set(k, v),
  };
}

export class UiState {
  private drafted: Record<string, Draft[]> = {};
  /** Entries of the stored drafts this window does not read, kept as they were. */
  private foreign: [string, unknown][] = [];
  private draftsReadable = true;
  private width: PanelWidths | null = null;
  private shown: PanelsShown = { left: true, right: true };
  private last: string | null = null;
  private hidden: string[] = [];
  /** Writes in the order they were made (a later value never lands before an earlier one). */
  private writes: Promise<void> = Promise.resolve();
  /** The newest value of each key with a write queued: a burst of changes is one write. */
  private queued = new Map<string, unknown>();
  /** Told when a value could not be kept (the app shows it); the console otherwise. */
  onFailure: (what: string, why: string) => void = (what, why) => console.warn(`${what} not kept:`, why);

  constructor(private kv: KeyValue = memoryKeyValue()) {}

  /** Keeps the state in `kv` from now on and reads what it holds (see `load`). */
  async attach(kv: KeyValue, old: OldStorage | null = null): Promise<void> {
    this.kv = kv;
    await this.load(old);
  }

  /** Reads what was kept; `old` (local storage) hands over the drafts it still holds. */
  async load(old: OldStorage | null = null): Promise<void> {
    const unread = Symbol("unread");
    const [drafts, widths, last, dismissed] = await Promise.all([KEYS.drafts, KEYS.widths, KEYS.lastSession, KEYS.dismissed].map((k) => this.kv.get(k).catch(() => unread)));
    // Drafts that could not be read at all stay where they are: this window keeps its new
    // ones in memory rather than write over them.
    this.draftsReadable = drafts !== unread;
    const kept: Record<string, Draft[]> = {};
    this.foreign = [];
    if (drafts && typeof drafts === "object" && !Array.isArray(drafts)) {
      for (const [k, list] of Object.entries(drafts)) {
        // A key of another shape (`constructor`, `__proto__`) is never assigned: with the
        // page's frozen prototypes that would throw and lose the rest of the state. What is
        // not read is written back as it was (a newer window's, say).
        const ok = DRAFT_KEY.test(k) && Array.isArray(list) ? list.filter(isDraft) : [];
        if (ok.length) Object.defineProperty(kept, k, { value: ok, enumerable: true, writable: true, configurable: true });
        else this.foreign.push([k, list]);
      }
    }
    this.drafted = kept;
    this.width = widthsOf(widths);
    const hidden = (widths as { hidden?: Partial<Record<keyof PanelsShown, unknown>> } | null)?.hidden;
    this.shown = { left: hidden?.left !== true, right: hidden?.right !== true };
    this.last = typeof last === "string" && last !== "" ? last : null;
    this.hidden = Array.isArray(dismissed) ? dismissed.filter((b): b is string => typeof b === "string") : [];
    if (old) this.takeOver(old);
  }

  private takeOver(old: OldStorage) {
    const found: string[] = [];
    for (let i = 0; i < old.length; i++) {
      const k = old.key(i);
      if (k && OLD_DRAFT.test(k)) found.push(k);
    }
    if (!found.length) return;
    for (const k of found) {
      const [, planId, version] = k.match(OLD_DRAFT) ?? [];
      let list: unknown;
      try {
        list = JSON.parse(old.getItem(k) ?? "[]");
      } catch {
        list = [];
      }
      const key = draftKey(planId, Number(version));
      const ok = Array.isArray(list) ? list.filter(isDraft) : [];
      if (ok.length && !this.drafted[key]) this.drafted[key] = ok;
    }
    // Removed from local storage only once they are in the store.
    // Moved only into drafts it could read (else they stay in local storage for next time).
    if (!this.draftsReadable) return;
    const copy = plain(this.draftsValue());
    this.writes = this.writes
      .then(() => this.kv.set(KEYS.drafts, copy))
      .then(() => found.forEach((k) => old.removeItem(k)))
      .catch((e: unknown) => this.failed("Comment drafts moved from an earlier version", e));
  }

  /** Says a value was not kept; the chain of writes goes on whatever the listener does. */
  private failed(what: string, e: unknown) {
    try {
      this.onFailure(what, reason(e));
    } catch {
      console.warn(`${what} not kept:`, e);
    }
  }

  /** Resolves when every write made so far has been handed to the store. */
  saved(): Promise<void> {
    return this.writes;
  }

  /** The stored drafts: this window's, and what it did not read, as it was. */
  private draftsValue(): Record<string, unknown> {
    return Object.fromEntries([...this.foreign, ...Object.entries(this.drafted)]);
  }

  private put(key: string, value: unknown) {
    const waiting = this.queued.has(key);
    this.queued.set(key, plain(value));
    if (waiting) return;
    this.writes = this.writes
      .then(() => {
        const v = this.queued.get(key);
        this.queued.delete(key);
        return this.kv.set(key, v);
      })
      .catch((e: unknown) => this.failed(LABELS[key] ?? key, e));
  }

  /** The comments written on a revision and not sent yet. */
  drafts(planId: string, version: number): Draft[] {
    return (this.drafted[draftKey(planId, version)] ?? []).map((d) => ({ ...d }));
  }

  setDrafts(planId: string, version: number, drafts: Draft[]) {
    const key = draftKey(planId, version);
    const next = drafts.map((d) => ({ start: d.start, end: d.end, text: d.text, quote: d.quote }));
    if (JSON.stringify(next) === JSON.stringify(this.drafted[key] ?? [])) return;
    // Drafts on an earlier revision of the same plan are past review once this one is being
    // commented on; the newest revisions are kept, at most MAX_DRAFTED of them.
    const rest = Object.entries(this.drafted).filter(([k]) => k !== key && !supersededBy(k, planId, version));
    if (next.length) rest.push([key, next]);
    const newest = rest.slice(-MAX_DRAFTED);
    this.foreign = this.foreign.slice(-MAX_DRAFTED);
    // Within what the app keeps for one key: the oldest revisions' drafts go first.
    while (newest.length > 1 && JSON.stringify([...this.foreign, ...newest]).length > DRAFTS_BYTES) {
      if (this.foreign.length) this.foreign.shift();
      else newest.shift();
    }
    const kept: Record<string, Draft[]> = {};
    for (const [k, v] of newest) Object.defineProperty(kept, k, { value: v, enumerable: true, writable: true, configurable: true });
    this.drafted = kept;
    if (this.draftsReadable) this.put(KEYS.drafts, this.draftsValue());
  }

  widths(): PanelWidths | null {
    return this.width && { ...this.width };
  }

  setWidths(w: PanelWidths) {
    const next = widthsOf(w);
    if (!next || (this.width && next.left === this.width.left && next.right === this.width.right)) return;
    this.width = next;
    this.putLayout();
  }

  /** Which side columns are shown (both, unless the user closed one). */
  panels(): PanelsShown {
    return { ...this.shown };
  }

  setPanels(p: PanelsShown) {
    if (p.left === this.shown.left && p.right === this.shown.right) return;
    this.shown = { left: p.left, right: p.right };
    this.putLayout();
  }

  /** Widths and closed columns are kept together, under one key. */
  private putLayout() {
    const w = this.width ?? { left: WIDTH_LIMITS.left.initial, right: WIDTH_LIMITS.right.initial };
    this.put(KEYS.widths, { ...w, hidden: { left: !this.shown.left, right: !this.shown.right } });
  }

  lastSession(): string | null {
    return this.last;
  }

  setLastSession(id: string) {
    if (id === this.last) return;
    this.last = id;
    this.put(KEYS.lastSession, id);
  }

  isDismissed(banner: string): boolean {
    return this.hidden.includes(banner);
  }

  dismiss(banner: string) {
    if (this.isDismissed(banner)) return;
    this.hidden = [...this.hidden, banner];
    this.put(KEYS.dismissed, this.hidden);
  }
}

/** Whether the drafts under `key` are on a revision of `planId` before `version`. */
function supersededBy(key: string, planId: string, version: number): boolean {
  const at = key.lastIndexOf(":v");
  return key.slice(0, at) === planId && Number(key.slice(at + 2)) < version;
}

/** What each key holds, as the window says it when it could not be kept. */
const LABELS: Record<string, string> = {
  [KEYS.drafts]: "Comment drafts",
  [KEYS.widths]: "Panel widths",
  [KEYS.lastSession]: "The open session",
  [KEYS.dismissed]: "Dismissed banners",
};

const reason = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** The app's store as key-value pairs; a refused call rejects with the app's message. */
function appKeyValue(): KeyValue {
  return {
    get: async (k) => {
      const r = await commands.uiStateGet(k);
      if (r.status === "error") throw new Error(r.error.message);
      return r.data ?? undefined;
    },
    set: async (k, v) => {
      const r = await commands.uiStateSet(k, v as never);
      if (r.status === "error") throw new Error(r.error.message);
    },
  };
}

/** The window's state. In memory until `connectUiState` finds the app's store. */
export const uiState = new UiState();

/** Connects to the app's store and reads what it kept (once, at start). Outside the app, or
 *  when the store cannot be reached, the state stays in memory for this page's life. */
export async function connectUiState(): Promise<UiState> {
  if (!isTauri()) return uiState;
  try {
    await uiState.attach(appKeyValue(), typeof localStorage === "undefined" ? null : localStorage);
  } catch (e) {
    console.warn("window state not kept:", e);
  }
  return uiState;
}
