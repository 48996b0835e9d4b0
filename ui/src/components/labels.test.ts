import { describe, expect, it, vi } from "vitest";
import { fireEvent, render, screen } from "@testing-library/svelte";
import type { Config_Serialize, SettingsView_Serialize } from "../bindings";
import type { Goal, PlanView, QuestionOf } from "../lib/types";
import { pending, permission, planApproval } from "../test/questions";

// The Settings page reads the settings when it opens.
vi.mock("../bindings", () => {
  const provider = { kind: "openai", base_url: "http://localhost:11434/v1", api_key_env: null, route: "own_key", model: null, context_tokens: null };
  const config = {
    model: null,
    permission_mode: "ask",
    providers: { local: provider },
    beta: { desktop_plan_mode: true, desktop_plan_mode_agent_entry: false, thread_goal: true },
    goal: { verification: null, budget: { default_tokens: null, default_main_turns: null, default_active_seconds: null, grace_steps: 2 }, breaker: { repeated_reply_limit: 3 }, verifier: { repeated_not_met_limit: 3 }, usage_limit: { auto_resumes: 3 } },
  } as unknown as Config_Serialize;
  const view: SettingsView_Serialize = { config, keys: [{ env_name: "OPENAI_API_KEY", stored: false }], keyring_error: null };
  const server = { name: "everything", state: "ready", target: "mcp-server-everything stdio", tools: [{ name: "echo", model_name: "mcp__everything__echo", description: "", read_only: false, vouched: false }] };
  return { commands: { getSettings: async () => ({ status: "ok", data: view }), mcpServers: async () => ({ status: "ok", data: [server] }) } };
});

const { default: Composer } = await import("./Composer.svelte");
const { default: ApprovalBar } = await import("./ApprovalBar.svelte");
const { default: QuestionDialog } = await import("./QuestionDialog.svelte");
const { default: PlanPanel } = await import("./PlanPanel.svelte");
const { default: GoalPanel } = await import("./GoalPanel.svelte");
const { default: Settings } = await import("./Settings.svelte");

/** Form controls that a screen reader would announce without a name. */
function unnamed(root: ParentNode): string[] {
  return [...root.querySelectorAll<HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement>("input, textarea, select")]
    .filter((el) => !(el.labels?.length || el.getAttribute("aria-label")?.trim() || el.getAttribute("aria-labelledby")))
    .map((el) => el.outerHTML);
}

const line = { limit: 100, used: 10, remaining: 90, reached: false };
const goal: Goal = { goal_id: "g1", objective: "ship", criteria: null, status: "active", reason: "created", actor: "user", revision: 1, budget: { tokens: line, main_turns: line, active_seconds: line }, over_budget: false, question: null, usage_limit: null, steps: [] };
const revision = (version: number) => ({ plan_id: "p1", version, sha256: "x", bytes: 1, author: "model" as const, truncated: false, created_at: 0 });
const plan: PlanView = { path: "/p/plan.md", markdown: "# Plan", html: "<h1>Plan</h1>", revisions: [revision(1), revision(2)], review: null, plans: [], comments: [] };

describe("every input, textarea and select has a name", () => {
  it("in the composer and the plan approval bar", async () => {
    const c = render(Composer, { running: false, mode: "default", onsend: async () => true, onstop: () => {} });
    expect(unnamed(c.container)).toEqual([]);
    const a = render(ApprovalBar, { review: planApproval({ options: ["A", "B"] }), onanswer: () => {} });
    await fireEvent.click(screen.getByTestId("revise"));
    expect(unnamed(a.container)).toEqual([]);
  });

  it("in the permission dialog", () => {
    const d = render(QuestionDialog, { pending: pending(permission({ command: "ls" })), onanswer: () => {}, onescape: () => {} });
    expect(unnamed(d.container)).toEqual([]);
  });

  it("in a server's form", () => {
    const choice = (multiple: boolean, n: number) => ({ type: "choice" as const, options: Array.from({ length: n }, (_, i) => ({ value: `v${i}`, label: `V${i}` })), multiple, min_items: null, max_items: null });
    const field = (name: string, kind: QuestionOf<"elicitation">["fields"][number]["kind"]) => ({ name, title: null, description: "about it", required: false, kind, default: null });
    const d = render(QuestionDialog, {
      pending: pending({
        kind: "elicitation",
        payload: {
          server: "srv",
          tool: "mcp__srv__ask",
          call_id: "c1",
          message: "Fill this in",
          fields: [
            field("t", { type: "text", format: "date", min_length: null, max_length: null }),
            field("n", { type: "number", integer: false, minimum: null, maximum: null }),
            field("b", { type: "boolean" }),
            field("few", choice(false, 2)),
            field("lots", choice(false, 9)),
            field("many", choice(true, 3)),
          ],
        },
      }),
      onanswer: () => {},
      onescape: () => {},
    });
    expect(d.container.querySelectorAll("input, select").length).toBe(10);
    expect(unnamed(d.container)).toEqual([]);
  });

  it("in the Plan tab, reading and editing", async () => {
    const p = render(PlanPanel, { sessionId: "s", view: plan, html: plan.html, markdown: plan.markdown, pending: null, mode: "plan", onanswer: () => {}, onerror: () => {} });
    expect(p.container.querySelectorAll("select")).toHaveLength(2);
    await fireEvent.click(screen.getByTestId("edit-plan"));
    expect(unnamed(p.container)).toEqual([]);
  });

  it("in the Goal tab, with and without a goal", async () => {
    const none = render(GoalPanel, { props: { goal: null, events: [], ongoal: async () => true, parse: async () => ({ error: "" }) } });
    expect(unnamed(none.container)).toEqual([]);
    none.unmount();
    const g = render(GoalPanel, { props: { goal, events: [], ongoal: async () => true, parse: async () => ({ error: "" }) } });
    await fireEvent.click(screen.getByTestId("goal-budget"));
    expect(unnamed(g.container)).toEqual([]);
  });

  it("in Settings", async () => {
    const s = render(Settings, { onclose: () => {}, onsaved: () => {} });
    await screen.findByTestId("key-input");
    await screen.findByTestId("tool-server-everything");
    expect(s.container.querySelectorAll("input, select").length).toBeGreaterThan(10);
    expect(unnamed(s.container)).toEqual([]);
  });
});
