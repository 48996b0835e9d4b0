// Links in rendered Markdown (plans, agent replies) open in the system browser, never in the
// app's window: a link a model wrote must not replace the app with a page of its choosing.
import { commands } from "../bindings";
import type { IpcError } from "./types";

/** A click handler for rendered Markdown: a link goes to the system browser (an emptied
 *  one, whose target the sanitizer refused, goes nowhere); a `#` link scrolls the page. */
export function linkClicks(onerror: (e: IpcError) => void = () => {}) {
  return (ev: MouseEvent) => {
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
