import { describe, expect, it, vi } from "vitest";
import { fireEvent, render, screen } from "@testing-library/svelte";
import type { Config_Serialize, SettingsView_Serialize } from "../bindings";

vi.mock("../bindings", () => {
  const config = {
    model: null,
    permission_mode: "ask",
    providers: {},
    beta: { desktop_plan_mode: true, desktop_plan_mode_agent_entry: false, thread_goal: false },
    goal: { verification: null, budget: { default_tokens: null, default_main_turns: null, default_active_seconds: null, grace_steps: 2 }, breaker: { repeated_reply_limit: 3 }, verifier: { repeated_not_met_limit: 3 }, usage_limit: { auto_resumes: 3 } },
  } as unknown as Config_Serialize;
  const view: SettingsView_Serialize = { config, keys: [], keyring_error: null };
  // The refusal names its key only in `setting`: the page must not need the message for it.
  const refused = { code: "invalid_settings", message: "goal.breaker.repeated_reply_limit is out of range", setting: "goal.breaker.repeated_reply_limit" };
  return { commands: { getSettings: async () => ({ status: "ok", data: view }), saveSettings: async () => ({ status: "error", error: refused }), mcpServers: async () => ({ status: "ok", data: [] }) } };
});

const { default: Settings } = await import("./Settings.svelte");

describe("Settings", () => {
  it("opens on the setting it is asked to show", async () => {
    render(Settings, { focus: "beta.thread_goal", onclose: () => {}, onsaved: () => {} });
    const flag = await screen.findByTestId("flag-goals");
    await vi.waitFor(() => expect(document.activeElement).toBe(flag));
  });

  it("marks the field a refused save names", async () => {
    render(Settings, { onclose: () => {}, onsaved: () => {} });
    const field = await screen.findByTestId("breaker-limit");
    await fireEvent.click(screen.getByTestId("settings-save"));
    // Said under the field, in its own words, and the field takes the caret.
    const said = await screen.findByTestId("field-error");
    expect(field.closest("label")?.contains(said)).toBe(true);
    expect(said.textContent).toBe("“Same reply this often = no progress” is out of range");
    expect(screen.queryByTestId("settings-error")).toBeNull();
    expect(field.closest("label")?.classList.contains("bad")).toBe(true);
    expect(document.activeElement).toBe(field);
  });

  it("has the tool servers' section with its add form", async () => {
    render(Settings, { onclose: () => {}, onsaved: () => {} });
    const section = await screen.findByTestId("tool-servers");
    expect(section.closest("section")?.querySelector("h2")?.textContent).toBe("Tool servers");
    expect(screen.getByTestId("add-server-submit")).toBeTruthy();
  });
});
