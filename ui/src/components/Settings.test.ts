import { beforeEach, describe, expect, it, vi } from "vitest";
import { fireEvent, render, screen, within } from "@testing-library/svelte";
import type { Config_Serialize, McpServerConfig_Serialize, SettingsView_Serialize } from "../bindings";

// The settings file is `app.disk`: read by getSettings, written by a Save the app accepts
// and by the tool servers' own commands. A Save is refused (naming its key only in
// `setting`) unless a test says otherwise.
const app = vi.hoisted(() => {
  const fresh = () =>
    ({
      model: null,
      permission_mode: "ask",
      providers: {},
      mcp_servers: {},
      beta: { desktop_plan_mode: true, desktop_plan_mode_agent_entry: false, thread_goal: false },
      goal: { verification: null, budget: { default_tokens: null, default_main_turns: null, default_active_seconds: null, grace_steps: 2 }, breaker: { repeated_reply_limit: 3 }, verifier: { repeated_not_met_limit: 3 }, usage_limit: { auto_resumes: 3 } },
      notifications: { goal_blocked: true, plan_awaiting_approval: true, budget_spent: true, goal_complete: true, goal_paused: true, spending_cap: true, usage_limit_stop: true, usage_limit_wait: false, turn_finished: false, goal_woke: true },
    }) as unknown as Config_Serialize;
  /** A stdio server as the settings file holds it. */
  const server = (command: string[]): McpServerConfig_Serialize => ({ command: command[0], args: command.slice(1), enabled: true, tool_timeout_ms: 60000, startup_timeout_ms: 30000 });
  return { fresh, server, disk: fresh(), refuse: true, saves: [] as Config_Serialize[], stored: [] as string[] };
});

vi.mock("../bindings", () => {
  const copy = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;
  const ok = <T>(data: T) => Promise.resolve({ status: "ok" as const, data });
  const refused = { code: "invalid_settings", message: "goal.breaker.repeated_reply_limit is out of range", setting: "goal.breaker.repeated_reply_limit" };
  return {
    commands: {
      getSettings: () => {
        const view: SettingsView_Serialize = { config: copy(app.disk), keys: [{ env_name: "OPENAI_API_KEY", stored: app.stored.includes("OPENAI_API_KEY") }], keyring_error: null };
        return ok(view);
      },
      saveSettings: (config: Config_Serialize) => {
        app.saves.push(copy(config));
        if (app.refuse) return Promise.resolve({ status: "error" as const, error: refused });
        app.disk = copy(config);
        return ok(null);
      },
      setApiKey: (env: string) => {
        app.stored.push(env);
        return ok(null);
      },
      mcpServers: () => ok([]),
      mcpAddServer: (name: string, command: string[]) => {
        app.disk.mcp_servers = { ...app.disk.mcp_servers, [name]: app.server(command) };
        return ok(null);
      },
    },
  };
});

const { default: Settings } = await import("./Settings.svelte");

beforeEach(() => {
  app.disk = app.fresh();
  app.refuse = true;
  app.saves = [];
  app.stored = [];
});

/** Settings, loaded, with `onclose` a spy. */
async function opened() {
  const onclose = vi.fn();
  render(Settings, { onclose, onsaved: () => {} });
  await screen.findByTestId("flag-goals");
  return onclose;
}

/** Adds a provider named `name` with the page's form. */
async function addProvider(name: string) {
  await fireEvent.input(screen.getByLabelText("New provider name"), { target: { value: name } });
  await fireEvent.click(screen.getByRole("button", { name: "Add provider" }));
  return screen.findByTestId(`provider-${name}`);
}

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
    expect(said.textContent).toBe("“Same reply this often pauses the goal as stuck” is out of range");
    expect(screen.queryByTestId("settings-error")).toBeNull();
    expect(field.closest("label")?.classList.contains("bad")).toBe(true);
    expect(document.activeElement).toBe(field);
  });

  it("saves an alert switch turned off, the others as they were (G-44)", async () => {
    app.refuse = false;
    render(Settings, { onclose: () => {}, onsaved: () => {} });
    const paused = (await screen.findByTestId("alert-goal_paused")) as HTMLInputElement;
    expect(paused.checked).toBe(true);
    expect((screen.getByTestId("alert-turn_finished") as HTMLInputElement).checked).toBe(false);
    await fireEvent.click(paused);
    expect(screen.getByTestId("settings-unsaved-alerts").textContent).toContain("press Save");
    await fireEvent.click(screen.getByTestId("settings-save"));
    await vi.waitFor(() => expect(app.saves.length).toBe(1));
    expect(app.saves[0].notifications).toMatchObject({ goal_paused: false, goal_blocked: true, turn_finished: false });
  });

  it("has the tool servers' section with its add form", async () => {
    render(Settings, { onclose: () => {}, onsaved: () => {} });
    const section = await screen.findByTestId("tool-servers");
    expect(section.closest("section")?.querySelector("h2")?.textContent).toBe("Tool servers");
    expect(screen.getByTestId("add-server-submit")).toBeTruthy();
  });

  it("goes back at once when nothing is unsaved", async () => {
    const onclose = await opened();
    await fireEvent.click(screen.getByTestId("settings-back"));
    expect(onclose).toHaveBeenCalledTimes(1);
    expect(screen.queryByTestId("settings-discard-confirm")).toBeNull();
  });

  it("asks before Back drops unsaved edits, and Keep editing keeps them", async () => {
    const onclose = await opened();
    const flag = screen.getByTestId("flag-goals") as HTMLInputElement;
    await fireEvent.click(flag);
    // The page and the section say the edit waits for Save.
    expect(screen.getByTestId("settings-unsaved")).toBeTruthy();
    expect(screen.getByTestId("settings-unsaved-features").textContent).toContain("press Save");
    expect(screen.queryByTestId("settings-unsaved-goals")).toBeNull();

    await fireEvent.click(screen.getByTestId("settings-back"));
    const ask = screen.getByTestId("settings-discard-confirm");
    expect(ask.getAttribute("role")).toBe("group");
    expect(ask.textContent).toContain("Discard your changes?");
    expect(ask.textContent).toContain("Not saved: Features.");
    expect(onclose).not.toHaveBeenCalled();
    // The answer that drops nothing has the focus; it closes the question and keeps the edit.
    await vi.waitFor(() => expect(document.activeElement).toBe(screen.getByTestId("settings-keep-editing")));
    await fireEvent.click(screen.getByTestId("settings-keep-editing"));
    expect(screen.queryByTestId("settings-discard-confirm")).toBeNull();
    expect(flag.checked).toBe(true);
    expect(onclose).not.toHaveBeenCalled();

    // Escape is "Keep editing" too.
    await fireEvent.click(screen.getByTestId("settings-back"));
    await fireEvent.keyDown(screen.getByTestId("settings-discard"), { key: "Escape" });
    expect(screen.queryByTestId("settings-discard-confirm")).toBeNull();

    await fireEvent.click(screen.getByTestId("settings-back"));
    await fireEvent.click(screen.getByTestId("settings-discard"));
    expect(onclose).toHaveBeenCalledTimes(1);
  });

  it("counts an edit taken back as nothing to ask about", async () => {
    const onclose = await opened();
    await fireEvent.input(screen.getByTestId("breaker-limit"), { target: { value: "7" } });
    expect(screen.getByTestId("settings-unsaved-goals")).toBeTruthy();
    await fireEvent.input(screen.getByTestId("breaker-limit"), { target: { value: "3" } });
    expect(screen.queryByTestId("settings-unsaved")).toBeNull();
    await fireEvent.click(screen.getByTestId("settings-back"));
    expect(onclose).toHaveBeenCalledTimes(1);
  });

  it("asks before Back drops a tool server typed but not added", async () => {
    const onclose = await opened();
    await fireEvent.input(screen.getByTestId("add-server-name"), { target: { value: "github" } });
    await fireEvent.click(screen.getByTestId("settings-back"));
    expect(screen.getByTestId("settings-discard-confirm").textContent).toContain("Not saved: the tool server not yet added.");
    expect(onclose).not.toHaveBeenCalled();
  });

  it("names no settings key in its text: each is in a tooltip", async () => {
    await opened();
    await addProvider("local");
    const page = screen.getByTestId("settings");
    const card = screen.getByTestId("setup-card");
    const controls = [...page.querySelectorAll<HTMLElement>("[data-key]")].filter((el) => !card.contains(el));
    const keys = controls.map((el) => el.dataset.key ?? "");
    expect(keys).toEqual(expect.arrayContaining(["beta.thread_goal", "goal.breaker.repeated_reply_limit", "providers.local.route", "mcp_servers", "model"]));
    for (const key of keys) if (/[._]/.test(key)) expect(page.textContent, key).not.toContain(key);
    // The key is the tooltip of the control's label (of a section: its heading).
    for (const el of controls) {
      const tipped = el.tagName === "SECTION" ? el.querySelector("h2") : el.closest("[title]");
      expect(tipped?.getAttribute("title"), el.dataset.key).toBe(`settings.json: ${el.dataset.key}`);
    }
  });

  it("says in a sentence what a provider's route Own key and Managed mean", async () => {
    await opened();
    const provider = await addProvider("local");
    const route = provider.querySelector<HTMLSelectElement>('[data-key="providers.local.route"]');
    const label = route?.closest("label");
    const hint = label ? within(label).getByTestId("route-hint").textContent ?? "" : "";
    expect(hint).toMatch(/“Own key” calls are billed to your own account/);
    expect(hint).toMatch(/“Managed” calls cost you nothing, so a read-only verifier agent checks every finished goal/);
    expect(hint.split(/[.!?](\s|$)/).filter((s) => s.trim()).length).toBe(1);
  });

  it("keeps unsaved edits when an API key is stored", async () => {
    await opened();
    await fireEvent.input(screen.getByTestId("breaker-limit"), { target: { value: "7" } });
    const row = screen.getByTestId("key-OPENAI_API_KEY");
    await fireEvent.input(within(row).getByTestId("key-input"), { target: { value: "sk-test" } });
    await fireEvent.click(within(row).getByTestId("key-store"));
    await vi.waitFor(() => expect(within(row).getByTestId("key-state").textContent).toBe("in keyring"));
    expect((screen.getByTestId("breaker-limit") as HTMLInputElement).value).toBe("7");
    expect(screen.getByTestId("settings-unsaved-goals")).toBeTruthy();
  });

  it("saves the tool servers and the other sections apart, neither undoing the other", async () => {
    app.refuse = false;
    await opened();
    await fireEvent.click(screen.getByTestId("flag-goals"));
    // A server added from the page is saved at once and is no unsaved edit of the page…
    await fireEvent.input(screen.getByTestId("add-server-name"), { target: { value: "files" } });
    await fireEvent.input(screen.getByTestId("add-server-command"), { target: { value: "server-fs /tmp" } });
    await fireEvent.click(screen.getByTestId("add-server-submit"));
    await vi.waitFor(() => expect((screen.getByTestId("add-server-name") as HTMLInputElement).value).toBe(""));
    expect(app.disk.mcp_servers).toHaveProperty("files");
    expect(app.disk.beta.thread_goal).toBe(false);
    expect(screen.getByTestId("settings-unsaved-features")).toBeTruthy();
    expect(screen.getByTestId("settings-when-servers").textContent).toContain("at once");
    // …and one saved elsewhere since the page was read is not undone by Save either.
    app.disk.mcp_servers = { ...app.disk.mcp_servers, other: app.server(["other"]) };
    await fireEvent.click(screen.getByTestId("settings-save"));
    await screen.findByTestId("settings-saved");
    expect(Object.keys(app.saves.at(-1)?.mcp_servers ?? {}).sort()).toEqual(["files", "other"]);
    expect(app.disk.beta.thread_goal).toBe(true);
    expect(screen.queryByTestId("settings-unsaved")).toBeNull();
  });
});
