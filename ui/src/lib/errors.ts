// A turn's error as the window says it: in words, with what to do next; the raw text the
// runtime gave stays for a fold.
import type { IpcError } from "./types";

/** An error said for the user: the headline, what to try, and the runtime's own words. */
export type Said = { text: string; next: "settings" | "retry" | null; detail: string | null };

/** The provider a model spec names, as people call it (`ollama:qwen3` → Ollama). */
function providerName(model: string | null): string | null {
  const p = model?.split(":")[0] ?? "";
  const known: Record<string, string> = { ollama: "Ollama", openai: "OpenAI", anthropic: "Anthropic", lmstudio: "LM Studio", vllm: "vLLM" };
  return known[p] ?? (p && p !== "scripted" ? p : null);
}

/** `host:port` of the first URL in `text`, or null. */
function where(text: string): string | null {
  const m = /https?:\/\/([^/\s:]+(?::\d+)?)/.exec(text);
  return m ? m[1] : null;
}

/** What the window says of a turn that ended in `error`, on `model`. */
export function sayError(error: IpcError, model: string | null): Said {
  const who = providerName(model);
  const at = where(error.message);
  const raw = error.message;
  switch (error.code) {
    case "network":
      return { text: `Could not reach ${who ?? "the model"}${at ? ` at ${at}` : ""} — is it running?`, next: "settings", detail: raw };
    case "timeout":
      return { text: `${who ?? "The model"}${at ? ` at ${at}` : ""} did not answer in time — it may be busy or stuck; try again.`, next: "retry", detail: raw };
    case "auth": {
      const missing = /\b([A-Z][A-Z0-9_]*) is not set\b/.exec(raw);
      if (missing) return { text: `${who ?? "The provider"} needs an API key: ${missing[1]} is not set — add the key in Settings.`, next: "settings", detail: raw };
      return { text: `${who ?? "The provider"} refused the key — check it in Settings.`, next: "settings", detail: raw };
    }
    case "rate_limited":
      return { text: `${who ?? "The provider"} is limiting requests — wait a moment and try again.`, next: "retry", detail: raw };
    case "quota_exhausted":
      return { text: `${who ?? "The provider"} says the account's quota is used up — check your plan or switch models.`, next: "settings", detail: raw };
    case "server_error":
      return { text: `${who ?? "The provider"} had an error on its side — try again.`, next: "retry", detail: raw };
    default:
      return { text: raw, next: null, detail: null };
  }
}
