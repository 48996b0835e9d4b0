// Links in rendered Markdown (plans, agent replies) open in the system browser, never in the
// app's window: a link a model wrote must not replace the app with a page of its choosing.
import { commands } from "../bindings";
import type { IpcError } from "./types";

/** Shows or hides the text of a "hidden text" marker the renderer put where the page would
 *  show nothing (an HTML comment, a dropped element, a link definition). */
export function toggleHidden(button: HTMLElement) {
  const text = button.parentElement?.querySelector<HTMLElement>(".plan-hidden-text");
  if (!text) return;
  const show = text.hidden;
  text.hidden = !show;
  button.setAttribute("aria-expanded", String(show));
  button.textContent = button.textContent?.replace(show ? /· show$/ : /· hide$/, show ? "· hide" : "· show") ?? "";
}

/** A click handler for rendered Markdown: a link goes to the system browser (an emptied
 *  one, whose target the sanitizer refused, goes nowhere); a `#` link scrolls the page; a
 *  hidden-text marker shows or hides its text. */
export function linkClicks(onerror: (e: IpcError) => void = () => {}) {
  return (ev: MouseEvent) => {
    const toggle = (ev.target as HTMLElement | null)?.closest<HTMLElement>("[data-hidden-toggle]");
    if (toggle) {
      ev.preventDefault();
      toggleHidden(toggle);
      return;
    }
    const a = (ev.target as HTMLElement | null)?.closest("a");
    if (!a) return;
    ev.preventDefault();
    const href = a.getAttribute("href") ?? "";
    if (href === "") return;
    if (href.startsWith("#")) {
      document.getElementById(href.slice(1))?.scrollIntoView();
      return;
    }
    commands.openLink(href).then((r) => {
      if (r.status === "error") onerror(r.error);
    });
  };
}
