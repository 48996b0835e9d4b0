import { describe, expect, it } from "vitest";
import { sayError } from "./errors";

describe("a turn's error in words", () => {
  it("says who could not be reached and where, with the raw chain kept for the fold", () => {
    const raw = "could not reach http://localhost:11434/v1/chat/completions: error sending request: tcp connect error: Connection refused (os error 111)";
    const said = sayError({ code: "network", message: raw }, "ollama:qwen3");
    expect(said.text).toBe("Could not reach Ollama at localhost:11434 — is it running?");
    expect(said.next).toBe("settings");
    expect(said.detail).toBe(raw);
  });

  it("names the next step for a refused key and a busy provider", () => {
    expect(sayError({ code: "auth", message: "HTTP 401" }, "openai:gpt-4.1")).toMatchObject({ text: "OpenAI refused the key — check it in Settings.", next: "settings" });
    expect(sayError({ code: "auth", message: "auth: MOCK_AUTH is not set: export your API key, or set api_key_env" }, "mock:m1").text).toBe("mock needs an API key: MOCK_AUTH is not set — add the key in Settings.");
    expect(sayError({ code: "rate_limited", message: "HTTP 429" }, "anthropic:claude")).toMatchObject({ next: "retry" });
    expect(sayError({ code: "timeout", message: "no response from http://10.0.0.1:8000/v1 within 60 s" }, "lab:m")).toMatchObject({ text: "lab at 10.0.0.1:8000 did not answer in time — it may be busy or stuck; try again." });
  });

  it("keeps other errors as they are", () => {
    expect(sayError({ code: "refused", message: "the plan is locked" }, null)).toEqual({ text: "the plan is locked", next: null, detail: null });
  });
});
