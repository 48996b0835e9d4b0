import { describe, expect, it } from "vitest";
import { ariaKeys, inDialog, inField, KEYS, PLACES, pressed, sheet } from "./keys";

const key = (key: string, more: KeyboardEventInit = {}) => new KeyboardEvent("keydown", { key, ...more });

describe("the window's keys", () => {
  it("matches a press to its chord, modifiers and all", () => {
    expect(pressed(key("n", { ctrlKey: true }), KEYS.newSession)).toBe(true);
    expect(pressed(key("N", { metaKey: true }), KEYS.newSession)).toBe(true);
    expect(pressed(key("n"), KEYS.newSession)).toBe(false);
    expect(pressed(key("N", { ctrlKey: true, shiftKey: true }), KEYS.newSession)).toBe(false);
    expect(pressed(key("n", { ctrlKey: true, altKey: true }), KEYS.newSession)).toBe(false);
    // `?` comes with Shift on most layouts, without on others.
    expect(pressed(key("?", { shiftKey: true }), KEYS.help)).toBe(true);
    expect(pressed(key("?"), KEYS.help)).toBe(true);
    expect(pressed(key("a"), KEYS.approvePlan)).toBe(true);
    expect(pressed(key("A", { shiftKey: true }), KEYS.approvePlan)).toBe(false);
    expect(pressed(key("Escape"), KEYS.stop)).toBe(true);
    expect(pressed(key("Escape", { isComposing: true }), KEYS.stop)).toBe(false);
    // WebKitGTK's Shift+Tab: key "Unidentified", code Tab.
    expect(pressed(key("Unidentified", { code: "Tab", shiftKey: true }), KEYS.planFirst)).toBe(true);
    expect(pressed(key("Tab"), KEYS.planFirst)).toBe(false);
    // A row that only sums up a widget's keys matches nothing.
    expect(pressed(key("1"), KEYS.answer)).toBe(false);
  });

  it("names the keys for aria-keyshortcuts", () => {
    expect([KEYS.approvePlan, KEYS.newSession, KEYS.planFirst, KEYS.stop, KEYS.answer].map(ariaKeys)).toEqual(["A", "Control+N", "Shift+Tab", "Escape", ""]);
  });

  it("puts every key in the sheet once, under where it works", () => {
    const sections = sheet();
    expect(sections.map((s) => s.title)).toEqual(Object.values(PLACES));
    expect(sections.flatMap((s) => s.keys)).toEqual(expect.arrayContaining(Object.values(KEYS)));
    expect(sections.flatMap((s) => s.keys)).toHaveLength(Object.keys(KEYS).length);
    expect(sections.every((s) => s.keys.length > 0)).toBe(true);
  });

  it("tells a text field from a control that takes no text, and a dialog's inside", () => {
    const el = (tag: string, type?: string) => Object.assign(document.createElement(tag), type ? { type } : {});
    expect([el("textarea"), el("select"), el("input"), el("input", "search"), el("input", "checkbox"), el("input", "radio"), el("button"), null].map(inField)).toEqual([true, true, true, true, false, false, false, false]);
    const dialog = el("div");
    dialog.setAttribute("aria-modal", "true");
    const inside = dialog.appendChild(el("button"));
    expect([inDialog(inside), inDialog(el("button"))]).toEqual([true, false]);
  });
});
