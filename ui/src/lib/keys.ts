// Every key the window answers, in one list. The handlers test a key press against its entry
// here (`pressed`) and the `?` sheet shows the same entries grouped by where they work, so a
// key cannot be handled without being listed.

/** A key as `KeyboardEvent` reports it, with the modifiers it needs. */
export type Chord = {
  /** `KeyboardEvent.key`; a letter in lower case (matched in either case). */
  key: string;
  /** `KeyboardEvent.code` that also counts (WebKitGTK names Shift+Tab's key "Unidentified"). */
  code?: string;
  /** Ctrl held (⌘ on macOS). */
  ctrl?: boolean;
  /** Shift held (true) or not (false); unset, either (`?` needs Shift on some layouts). */
  shift?: boolean;
};

/** Where a key works: the sheet's sections, in this order. */
export const PLACES = {
  window: "Anywhere in the window",
  composer: "In the composer",
  plan: "A plan under review (focus outside a text field)",
  question: "A question from the agent",
  widgets: "Lists, tabs and dividers",
} as const;

export type Place = keyof typeof PLACES;

export type Shortcut = {
  /** How the sheet and the buttons show the key. */
  label: string;
  /** What it does. */
  what: string;
  where: Place;
  /** The press a handler matches; unset for a row that sums up keys handled by a widget
   *  itself (the numbered answers, the arrows of a list). */
  chord?: Chord;
};

/** The window's keys by name, in the order the sheet lists them within a section. */
export const KEYS = {
  newSession: { label: "Ctrl+N", what: "New session in the current folder", where: "window", chord: { key: "n", ctrl: true, shift: false } },
  switchSession: { label: "Ctrl+K", what: "Switch session", where: "window", chord: { key: "k", ctrl: true, shift: false } },
  sessionList: { label: "Ctrl+B", what: "Show or hide the session list", where: "window", chord: { key: "b", ctrl: true, shift: false } },
  sidePanel: { label: "Ctrl+J", what: "Show or hide the side panel", where: "window", chord: { key: "j", ctrl: true, shift: false } },
  stop: { label: "Esc", what: "Stop the running turn (when no list, dialog or drawer is open and the focus is not in another field)", where: "window", chord: { key: "Escape" } },
  close: { label: "Esc", what: "Close a list, a dialog or the drawer; leave focus review", where: "window" },
  help: { label: "?", what: "This sheet (outside a text field; or /help in the composer)", where: "window", chord: { key: "?" } },
  send: { label: "Enter", what: "Send (Shift+Enter: a new line)", where: "composer" },
  planFirst: { label: "Shift+Tab", what: "Plan first: the next message enters plan mode; in plan mode, it leaves it (again: cancel)", where: "composer", chord: { key: "Tab", code: "Tab", shift: true } },
  complete: { label: "/ and @", what: "Commands and workspace files: ↑ ↓ choose, Tab or Enter takes one, Esc closes the list", where: "composer" },
  previous: { label: "↑", what: "In an empty composer: the message you sent before; again, an older one", where: "composer", chord: { key: "ArrowUp", shift: false } },
  next: { label: "↓", what: "Back through those to a newer message, then to an empty composer", where: "composer", chord: { key: "ArrowDown", shift: false } },
  approvePlan: { label: "A", what: "Approve & implement", where: "plan", chord: { key: "a", shift: false } },
  revisePlan: { label: "R", what: "Revise: write what should change", where: "plan", chord: { key: "r", shift: false } },
  answer: { label: "1 2 3 · Enter", what: "In a permission question: the numbered answer · Allow once", where: "question" },
  putAside: { label: "Esc", what: "Put the question aside (unanswered; “Show the question” brings it back)", where: "question" },
  pick: { label: "↑ ↓ · Enter", what: "In the session switcher: choose · open", where: "widgets" },
  tabs: { label: "← → · Home End", what: "On the side panel's tabs: the next tab · the first or last", where: "widgets" },
  resize: { label: "← → · Home End", what: "On a column's edge: wider or narrower · narrowest or widest", where: "widgets" },
  rename: { label: "Enter · Esc", what: "Renaming a session: keep the title · cancel", where: "widgets" },
} as const satisfies Record<string, Shortcut>;

/** The sheet: each place with its keys, in order. */
export function sheet(): { title: string; keys: Shortcut[] }[] {
  const all: Shortcut[] = Object.values(KEYS);
  return (Object.keys(PLACES) as Place[]).map((p) => ({ title: PLACES[p], keys: all.filter((k) => k.where === p) }));
}

/** Whether `e` is the press `s` names (never while an input method composes text). */
export function pressed(e: KeyboardEvent, s: Shortcut): boolean {
  const c = s.chord;
  if (!c || e.isComposing || e.altKey || (e.ctrlKey || e.metaKey) !== (c.ctrl ?? false)) return false;
  if (c.shift !== undefined && e.shiftKey !== c.shift) return false;
  const key = c.key.length === 1 ? e.key.toLowerCase() === c.key : e.key === c.key;
  return key || (c.code !== undefined && e.code === c.code);
}

/** The `aria-keyshortcuts` value for `s` ("A", "Control+N"). */
export function ariaKeys(s: Shortcut): string {
  const c = s.chord;
  if (!c) return "";
  const key = c.key.length === 1 ? c.key.toUpperCase() : c.key;
  return [c.ctrl ? "Control" : null, c.shift ? "Shift" : null, key].filter(Boolean).join("+");
}

/** Whether `target` takes typed text (where a letter or Escape means something to it). A
 *  checkbox or a radio button does not. */
export function inField(target: EventTarget | null): boolean {
  if (target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement) return true;
  if (target instanceof HTMLInputElement) return !["checkbox", "radio", "button", "submit", "reset", "range", "color", "file"].includes(target.type);
  return target instanceof HTMLElement && target.isContentEditable === true;
}

/** Whether `target` is inside a modal dialog (its own keys come first). */
export function inDialog(target: EventTarget | null): boolean {
  return target instanceof Element && target.closest("[aria-modal=true]") !== null;
}
