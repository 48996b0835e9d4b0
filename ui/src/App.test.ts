import { describe, expect, it, vi } from "vitest";
import { fireEvent, render, screen } from "@testing-library/svelte";

// The app as the window sees it at start: no sessions to open, settings readable, and the
// session list refused for a reason that names a setting.
vi.mock("./bindings", async () => {
  const { mockBindings } = await import("./test/bindings");
  const config = {
    model: null,
    permission_mode: "ask",
    providers: {},
    beta: { desktop_plan_mode: true, desktop_plan_mode_agent_entry: false, thread_goal: false },
    goal: { verification: null, budget: { default_tokens: null, default_main_turns: null, default_active_seconds: null, grace_steps: 2 }, breaker: { repeated_reply_limit: 3 }, verifier: { repeated_not_met_limit: 3 }, usage_limit: { auto_resumes: 3 } },
  };
  const refused = { code: "feature_off", message: "goals are turned off", setting: "beta.thread_goal" };
  return mockBindings({
    commands: {
      listSessions: async () => ({ status: "error", error: refused }),
      getSettings: async () => ({ status: "ok", data: { config, keys: [], keyring_error: null } }),
    },
  });
});

const { default: App } = await import("./App.svelte");

describe("App", () => {
  it("offers to open the setting an error names, and opens Settings on it", async () => {
    render(App);
    const toast = await screen.findByTestId("toast");
    expect(toast.textContent).toContain("goals are turned off");
    await fireEvent.click(screen.getByTestId("toast-settings"));
    expect(screen.queryByTestId("toast")).toBeNull();
    const flag = await screen.findByTestId("flag-goals");
    await vi.waitFor(() => expect(document.activeElement).toBe(flag));
  });
});
