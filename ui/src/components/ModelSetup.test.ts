import { describe, expect, it, vi } from "vitest";
import { fireEvent, render, screen } from "@testing-library/svelte";
import type { ModelSetup } from "../bindings";

const calls = vi.hoisted(() => ({ tested: [] as [ModelSetup, string | null][], saved: [] as [ModelSetup, string | null][] }));
vi.mock("../bindings", () => {
  const view = { config: {}, keys: [{ env_name: "OPENAI_API_KEY", stored: true }, { env_name: "ANTHROPIC_API_KEY", stored: false }], keyring_error: null };
  return {
    commands: {
      getSettings: async () => ({ status: "ok", data: view }),
      // The server refuses the key; the card must put that under the key field.
      testModelSetup: async (s: ModelSetup, key: string | null) => {
        calls.tested.push([s, key]);
        if (s.model === "") return { status: "error", error: { code: "invalid_settings", message: "name the model", setting: "setup.model" } };
        return key === "sk-good"
          ? { status: "ok", data: { model: "custom:m1", millis: 42 } }
          : { status: "error", error: { code: "auth", message: "the provider refused the credentials (HTTP 401)", setting: "setup.key" } };
      },
      // The good key lists two models; any other is refused, under the key field.
      listSetupModels: async (_s: ModelSetup, key: string | null) =>
        (key === "sk-slow" && (await new Promise((go) => setTimeout(go, 30)))) || key === "sk-good" || key === "sk-slow"
          ? { status: "ok", data: ["m1", "m2"] }
          : { status: "error", error: { code: "auth", message: "the provider refused the credentials (HTTP 401)", setting: "setup.key" } },
      saveModelSetup: async (s: ModelSetup, key: string | null) => {
        calls.saved.push([s, key]);
        return s.model === "" ? { status: "error", error: { code: "invalid_settings", message: "name the model", setting: "setup.model" } } : { status: "ok", data: "custom:m1" };
      },
    },
  };
});

const { default: Card } = await import("./ModelSetup.svelte");

describe("the setup card", () => {
  it("fills the address for the provider picked and keeps one the user typed", async () => {
    render(Card, { onsaved: () => {}, ondemo: () => {} });
    const url = (await screen.findByTestId("setup-base-url")) as HTMLInputElement;
    expect(url.value).toBe("https://api.openai.com/v1");
    await fireEvent.click(screen.getByTestId("setup-provider-anthropic"));
    expect(url.value).toBe("https://api.anthropic.com");
    // Ollama takes no key: no key field.
    await fireEvent.click(screen.getByTestId("setup-provider-ollama"));
    expect(url.value).toBe("http://localhost:11434/v1");
    expect(screen.queryByTestId("setup-key")).toBeNull();
    await fireEvent.click(screen.getByTestId("setup-provider-compatible"));
    expect(url.value).toBe("");
    await fireEvent.input(url, { target: { value: "http://127.0.0.1:9/v1" } });
    await fireEvent.click(screen.getByTestId("setup-provider-openai"));
    expect(url.value).toBe("http://127.0.0.1:9/v1");
    // A key already in the keyring is said, so the field may stay empty; but only for the
    // provider's own address (another address gets a key of its own).
    expect(screen.getByTestId("setup-key-note").textContent).not.toContain("already in the keyring");
    await fireEvent.input(url, { target: { value: "https://api.openai.com/v1/" } });
    expect(screen.getByTestId("setup-key-note").textContent).toContain("OPENAI_API_KEY is already in the keyring");
  });

  it("puts a refused key under the key field, then says the model answered", async () => {
    render(Card, { onsaved: () => {}, ondemo: () => {} });
    await fireEvent.click(await screen.findByTestId("setup-provider-compatible"));
    await fireEvent.input(screen.getByTestId("setup-base-url"), { target: { value: "http://127.0.0.1:9/v1" } });
    await fireEvent.input(screen.getByTestId("setup-model"), { target: { value: "m1" } });
    const key = screen.getByTestId("setup-key");
    await fireEvent.input(key, { target: { value: "sk-bad" } });
    await fireEvent.click(screen.getByTestId("setup-test"));
    const said = await screen.findByTestId("setup-error-key");
    expect(said.textContent).toContain("HTTP 401");
    expect(key.closest("label")?.contains(said)).toBe(true);
    expect(document.activeElement).toBe(key);
    expect(calls.tested.at(-1)).toEqual([{ provider: "compatible", base_url: "http://127.0.0.1:9/v1", model: "m1" }, "sk-bad"]);
    await fireEvent.input(key, { target: { value: "sk-good" } });
    await fireEvent.click(screen.getByTestId("setup-test"));
    expect((await screen.findByText(/answered in 42 ms/)).textContent).toContain("custom:m1");
    expect(screen.queryByTestId("setup-error-key")).toBeNull();
  });

  it("tests before it saves, and saves an untested model only on Save anyway", async () => {
    const onsaved = vi.fn();
    const ondemo = vi.fn();
    render(Card, { onsaved, ondemo });
    const saved = calls.saved.length;
    await fireEvent.click(await screen.findByTestId("setup-save"));
    const said = await screen.findByTestId("setup-error-model");
    expect(document.activeElement).toBe(screen.getByTestId("setup-model"));
    expect(said.textContent).toBe("name the model");
    expect(onsaved).not.toHaveBeenCalled();
    expect(calls.saved.length).toBe(saved);
    // A model the test cannot reach: nothing saved, and "Save anyway" is offered.
    await fireEvent.input(screen.getByTestId("setup-model"), { target: { value: "m1" } });
    await fireEvent.input(screen.getByTestId("setup-key"), { target: { value: "sk-bad" } });
    await fireEvent.click(screen.getByTestId("setup-save"));
    await screen.findByTestId("setup-error-key");
    expect((await screen.findByTestId("setup-untested")).textContent).toContain("nothing was saved");
    expect(calls.saved.length).toBe(saved);
    expect(screen.queryByText(/Connected/)).toBeNull();
    await fireEvent.click(screen.getByTestId("setup-save-anyway"));
    await vi.waitFor(() => expect(onsaved).toHaveBeenCalledWith("custom:m1", false));
    expect(calls.saved.at(-1)?.[1]).toBe("sk-bad");
    // A test that reached the model: the save after it sends no second test.
    await fireEvent.input(screen.getByTestId("setup-key"), { target: { value: "sk-good" } });
    await fireEvent.click(screen.getByTestId("setup-test"));
    await screen.findByText(/answered in 42 ms/);
    const tests = calls.tested.length;
    await fireEvent.click(screen.getByTestId("setup-save"));
    await vi.waitFor(() => expect(onsaved).toHaveBeenLastCalledWith("custom:m1", true));
    expect(calls.tested.length).toBe(tests);
    expect(screen.queryByTestId("setup-save-anyway")).toBeNull();
    await fireEvent.click(screen.getByTestId("setup-demo"));
    expect(ondemo).toHaveBeenCalled();
  });

  it("inside Settings: the same card, without the demo line", async () => {
    render(Card, { onsaved: () => {}, embedded: true });
    expect(await screen.findByTestId("setup-test")).toBeTruthy();
    expect(screen.getByTestId("setup-save").textContent).toBe("Test and save");
    expect(screen.queryByTestId("setup-demo")).toBeNull();
  });

  it("lists the server's models to pick from, and says a refused key under its field", async () => {
    render(Card, { onsaved: () => {}, ondemo: () => {} });
    await fireEvent.click(await screen.findByTestId("setup-provider-compatible"));
    await fireEvent.input(screen.getByTestId("setup-base-url"), { target: { value: "http://127.0.0.1:9/v1" } });
    const key = screen.getByTestId("setup-key");
    await fireEvent.input(key, { target: { value: "sk-bad" } });
    await fireEvent.click(screen.getByTestId("setup-list-models"));
    expect((await screen.findByTestId("setup-error-key")).textContent).toContain("HTTP 401");
    expect(screen.queryByTestId("setup-models")).toBeNull();
    await fireEvent.input(key, { target: { value: "sk-good" } });
    await fireEvent.click(screen.getByTestId("setup-list-models"));
    const list = (await screen.findByTestId("setup-models")) as HTMLSelectElement;
    expect([...list.options].map((o) => o.value)).toEqual(["", "m1", "m2"]);
    expect(list.options[0].textContent).toContain("2 models on this server");
    await fireEvent.change(list, { target: { value: "m2" } });
    expect((screen.getByTestId("setup-model") as HTMLInputElement).value).toBe("m2");
    // Another address: the list was that server's.
    await fireEvent.input(screen.getByTestId("setup-base-url"), { target: { value: "http://127.0.0.1:8/v1" } });
    expect(screen.queryByTestId("setup-models")).toBeNull();
    // A reply that comes back after the provider changed is dropped.
    await fireEvent.input(key, { target: { value: "sk-slow" } });
    await fireEvent.click(screen.getByTestId("setup-list-models"));
    await fireEvent.click(screen.getByTestId("setup-provider-ollama"));
    await new Promise((go) => setTimeout(go, 60));
    expect(screen.queryByTestId("setup-models")).toBeNull();
  });
});
