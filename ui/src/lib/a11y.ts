// Keyboard behaviour shared by widgets: a modal dialog that keeps focus inside itself, and
// arrow-key movement in a tab list.

const FOCUSABLE = "a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), summary, [tabindex]:not([tabindex='-1'])";

/** The elements inside `root` that Tab reaches, in order. */
export function focusables(root: HTMLElement): HTMLElement[] {
  return [...root.querySelectorAll<HTMLElement>(FOCUSABLE)].filter((el) => !el.hidden && !el.closest("[inert]"));
}

export type ModalOptions = { onescape: () => void };

/**
 * Svelte action for a modal dialog: it takes focus when it opens, Tab and Shift+Tab cycle
 * inside it, focus that escapes (a click outside, a script) is brought back, Escape calls
 * `onescape`, and focus returns to where it was once the dialog is gone. The dialog element
 * needs `tabindex="-1"`; it is focused first rather than a button, so that an Enter typed
 * for something else cannot answer it.
 */
export function modal(node: HTMLElement, options: ModalOptions) {
  let { onescape } = options;
  const before = document.activeElement instanceof HTMLElement ? document.activeElement : null;
  node.focus();

  function onkeydown(e: KeyboardEvent) {
    if (e.key === "Escape") {
      e.preventDefault();
      e.stopPropagation();
      onescape();
      return;
    }
    // WebKitGTK reports Shift+Tab with key "Unidentified": the code says Tab.
    if (e.key !== "Tab" && e.code !== "Tab") return;
    const list = focusables(node);
    const at = document.activeElement;
    if (list.length === 0) {
      e.preventDefault();
      node.focus();
    } else if (e.shiftKey && (at === list[0] || at === node)) {
      e.preventDefault();
      list[list.length - 1].focus();
    } else if (!e.shiftKey && at === list[list.length - 1]) {
      e.preventDefault();
      list[0].focus();
    }
  }
  function onfocusin(e: FocusEvent) {
    if (e.target instanceof Node && !node.contains(e.target)) node.focus();
  }

  node.addEventListener("keydown", onkeydown);
  document.addEventListener("focusin", onfocusin);
  return {
    update(next: ModalOptions) {
      onescape = next.onescape;
    },
    destroy() {
      node.removeEventListener("keydown", onkeydown);
      document.removeEventListener("focusin", onfocusin);
      if (before?.isConnected) before.focus();
    },
  };
}

/** The index a key moves to in a list of `count` tabs (Left/Right wrap around, Home and
 *  End go to the ends), or null for any other key. */
export function tabMove(key: string, at: number, count: number): number | null {
  switch (key) {
    case "ArrowRight":
      return (at + 1) % count;
    case "ArrowLeft":
      return (at - 1 + count) % count;
    case "Home":
      return 0;
    case "End":
      return count - 1;
    default:
      return null;
  }
}
