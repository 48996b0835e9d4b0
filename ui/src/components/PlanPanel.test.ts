import { describe, expect, it, vi } from "vitest";
import { fireEvent, render, screen, within } from "@testing-library/svelte";
import type { PlanRevisionInfo, PlanSummary_Serialize } from "../bindings";
import type { PlanView, Questionnaire } from "../lib/types";
import { pending, planApproval } from "../test/questions";

// Reading a plan from the list asks the app for its newest revision.
const app = vi.hoisted(() => ({ read: [] as string[] }));
vi.mock("../bindings", () => ({
  commands: {
    planRevision: async (_id: string, planId: string, version: number) => {
      app.read.push(`${planId} v${version}`);
      return { status: "ok", data: { plan_id: planId, version, markdown: `# ${planId}`, html: `<h1>${planId} v${version}</h1>` } };
    },
  },
}));

const { default: PlanPanel } = await import("./PlanPanel.svelte");
const { uiState } = await import("../lib/uistate");

const rev = (plan_id: string, version: number): PlanRevisionInfo => ({ plan_id, version, sha256: "x", bytes: 1, author: "model", truncated: false, created_at: 0 });
const summary = (plan_id: string, p: Partial<PlanSummary_Serialize>): PlanSummary_Serialize => ({ plan_id, status: "rejected", revisions: 1, title: null, created_at: 0, ended_at: null, current: false, ...p });
const base: PlanView = { path: "/d/artifacts/plan.md", markdown: "# Live", html: "<h1>LIVE FILE</h1>", revisions: [rev("p1", 1)], review: null, plans: [], comments: [] };

function show(view: PlanView, extra: { pending?: Questionnaire | null; submitted?: { plan_id: string; version: number; markdown: string; html: string } | null } = {}) {
  return render(PlanPanel, { sessionId: "s1", view, html: view.html, markdown: view.markdown, mode: "plan", onanswer: () => {}, onerror: () => {}, pending: null, ...extra });
}
const underReview = (file_changed: boolean) => ({
  view: { ...base, revisions: [rev("p1", 1), rev("p1", 2)], review: { plan_id: "p1", version: 2, file_changed } },
  pending: pending({ kind: "plan_approval", payload: planApproval({ plan_id: "p1", version: 2 }) }),
  submitted: { plan_id: "p1", version: 2, markdown: "# Submitted", html: "<h1>SUBMITTED V2</h1>" },
});

describe("PlanPanel", () => {
  it("under review shows the revision as submitted, not the file", () => {
    const r = underReview(false);
    show(r.view, { pending: r.pending, submitted: r.submitted });
    const doc = screen.getByTestId("plan-doc");
    expect(doc.textContent).toBe("SUBMITTED V2");
    expect(doc.dataset.shows).toBe("submitted");
    expect(screen.getByTestId("plan-shown").textContent).toContain("v2 as submitted");
    expect(screen.queryByTestId("plan-drift")).toBeNull();
  });

  it("says when the file changed since it was submitted, and shows the file only when asked", async () => {
    const r = underReview(true);
    show(r.view, { pending: r.pending, submitted: r.submitted });
    expect(screen.getByTestId("plan-drift").textContent).toContain("changed since v2 was submitted");
    expect(screen.getByTestId("plan-doc").textContent).toBe("SUBMITTED V2");
    await fireEvent.click(screen.getByTestId("plan-drift-toggle"));
    expect(screen.getByTestId("plan-doc").textContent).toBe("LIVE FILE");
    expect(screen.getByTestId("plan-doc").dataset.shows).toBe("file");
    expect(screen.getByTestId("plan-drift").textContent).toContain("Approving implements v2 as submitted, not this");
    await fireEvent.click(screen.getByTestId("plan-drift-toggle"));
    expect(screen.getByTestId("plan-doc").textContent).toBe("SUBMITTED V2");
  });

  it("shows no drifted file while the submitted revision is being read", () => {
    const r = underReview(true);
    show(r.view, { pending: r.pending, submitted: null });
    expect(screen.queryByTestId("plan-doc")).toBeNull();
    expect(screen.getByTestId("plan-loading").textContent).toContain("v2");
    // Not drifted: the file holds the revision word for word meanwhile.
    const same = underReview(false);
    const other = show(same.view, { pending: same.pending, submitted: null });
    expect(within(other.container).getByTestId("plan-doc").textContent).toBe("LIVE FILE");
  });

  it("shows the live file when nothing is under review", () => {
    show(base);
    expect(screen.getByTestId("plan-doc").textContent).toBe("LIVE FILE");
    expect(screen.getByTestId("plan-doc").dataset.shows).toBe("file");
  });

  it("renders inline Markdown in plan titles, and markup in them as text", () => {
    const plans = [summary("p1", { title: "Rename `greet` to **hello**" }), summary("p2", { title: '<img src=x onerror="window.__pwned=1"> *now*', current: true, status: "drafting" })];
    const { container } = show({ ...base, plans, revisions: [rev("p1", 1), rev("p2", 1)] });
    const [newest, first] = screen.getAllByTestId("plan-item");
    expect(first.querySelector("code")?.textContent).toBe("greet");
    expect(first.querySelector("strong")?.textContent).toBe("hello");
    expect(first.querySelector("button")?.textContent).toBe("Rename greet to hello");
    expect(newest.querySelector("em")?.textContent).toBe("now");
    expect(newest.querySelector("button")?.textContent).toContain('<img src=x onerror="window.__pwned=1">');
    expect(container.querySelector("[data-testid=plan-history] img")).toBeNull();
  });

  it("lists only the revisions of one plan: the current one, or the one being read", async () => {
    const plans = [summary("p1", { revisions: 2, title: "First plan" }), summary("p2", { revisions: 1, current: true, status: "drafting", title: "Second plan" })];
    const { container } = show({ ...base, plans, revisions: [rev("p1", 1), rev("p1", 2), rev("p2", 1)] });
    const listed = () => [...container.querySelectorAll("[data-testid=revisions] li")].map((li) => li.querySelector(".badge")?.textContent);
    expect(listed()).toEqual(["v1"]);
    expect(container.querySelectorAll(".diffpick select")).toHaveLength(0); // one revision: nothing to compare

    // Reading the first plan: its two revisions, and the pickers offer only those.
    await fireEvent.click(within(screen.getAllByTestId("plan-item")[1]).getByRole("button"));
    await screen.findByTestId("plan-old");
    expect(app.read).toEqual(["p1 v2"]);
    expect(listed()).toEqual(["v1", "v2"]);
    const pickers = [...container.querySelectorAll<HTMLSelectElement>(".diffpick select")];
    expect(pickers.map((s) => [...s.options].map((o) => o.value))).toEqual([["p1:1", "p1:2"], ["p1:1", "p1:2"]]);
    expect(pickers.map((s) => s.value)).toEqual(["p1:1", "p1:2"]);
    expect(container.querySelector("[data-testid=revisions]")?.closest("section")?.querySelector("h3")?.textContent).toContain("First plan");

    await fireEvent.click(screen.getByTestId("plan-old-close"));
    expect(listed()).toEqual(["v1"]);
  });
});

describe("plan mode before the plan is submitted", () => {
  const drafting = (html: string, markdown: string | null): PlanView => ({ ...base, html, markdown, plans: [summary("p1", { status: "rejected" }), summary("p2", { current: true, status: "drafting", revisions: 0 })], revisions: [rev("p1", 1)] });

  it("shows the file as a draft not yet submitted", () => {
    show(drafting("<h2>Summary</h2><p>DRAFT TEXT</p>", "## Summary\nDRAFT TEXT\n"));
    expect(screen.getByTestId("plan-doc").textContent).toContain("DRAFT TEXT");
    expect(screen.getByTestId("plan-draft").textContent).toBe("Draft — not submitted yet");
    expect(screen.queryByTestId("plan-empty")).toBeNull();
  });

  it("says the agent is investigating while nothing is written, never to turn plan mode on", () => {
    const { container } = show(drafting("", null));
    expect(screen.getByTestId("plan-empty").textContent).toBe("The agent is investigating; the plan appears here as it is written.");
    expect(container.textContent).not.toContain("No plan yet");
    expect(container.textContent).not.toContain("/plan on");
    expect(screen.queryByTestId("plan-draft")).toBeNull();
  });

  it("calls a submitted plan's file no draft, and outside plan mode asks for a plan", () => {
    const submitted = show(base);
    expect(within(submitted.container).queryByTestId("plan-draft")).toBeNull();
    submitted.unmount();
    render(PlanPanel, { sessionId: "s1", view: { ...base, html: "", markdown: null }, html: "", markdown: null, mode: "default", onanswer: () => {}, onerror: () => {}, pending: null });
    expect(screen.getByTestId("plan-empty").textContent).toContain("No plan yet");
  });
});

describe("review again after Not now", () => {
  it("asks for the review again and shows what the review approves once it opens, guessing nothing before", async () => {
    app.read = [];
    const onreviewagain = vi.fn();
    const view: PlanView = { ...base, html: "<p>LIVE FILE</p>", plans: [summary("p1", { current: true, status: "drafting", revisions: 2 })], revisions: [rev("p1", 1), rev("p1", 2)] };
    const props = { sessionId: "s1", view, html: view.html, markdown: view.markdown, mode: "plan" as const, onanswer: () => {}, onerror: () => {}, pending: null, deferred: true, onreviewagain };
    const r = render(PlanPanel, props);
    expect(screen.getByTestId("plan-doc").dataset.shows).toBe("file");
    await fireEvent.click(screen.getByTestId("review-again"));
    expect(onreviewagain).toHaveBeenCalledOnce();
    // Until the review opens, the file; no revision is read on a guess.
    expect(screen.getByTestId("plan-doc").dataset.shows).toBe("file");
    expect(app.read).toEqual([]);

    // The review opens: what it shows is the review's own revision as submitted.
    const q = pending({ kind: "plan_approval", payload: planApproval({ plan_id: "p1", version: 2 }) });
    await r.rerender({ ...props, deferred: false, pending: q, view: { ...view, review: { plan_id: "p1", version: 2, file_changed: false } }, submitted: { plan_id: "p1", version: 2, markdown: "# v2", html: "<h1>SUBMITTED V2</h1>" } });
    expect(screen.getByTestId("plan-doc").textContent).toBe("SUBMITTED V2");
    // Ended, and plan mode left: the file again, not the recalled revision.
    await r.rerender({ ...props, deferred: false, mode: "default", pending: null, view });
    expect(screen.getByTestId("plan-doc").textContent).toBe("LIVE FILE");
  });
});

describe("drafts sent with a revise", () => {
  it("leave the window state even when the review is gone before the answer comes back", async () => {
    uiState.setDrafts("p9", 1, [{ start: 1, end: 1, text: "sent already", quote: "a" }]);
    const view: PlanView = { ...base, review: { plan_id: "p9", version: 1, file_changed: false } };
    const q = pending({ kind: "plan_approval", payload: planApproval({ plan_id: "p9", version: 1 }) });
    let r: ReturnType<typeof render> | null = null;
    const onanswer = async () => {
      // The event stream ends the review first (the answer was taken), then the reply comes.
      await r?.rerender({ pending: null, view: { ...view, review: null } });
      return true;
    };
    r = render(PlanPanel, { sessionId: "s1", view, html: view.html, markdown: view.markdown, mode: "plan", onanswer, onerror: () => {}, pending: q });
    await fireEvent.click(screen.getByTestId("revise"));
    await fireEvent.click(screen.getByTestId("revise-send"));
    await new Promise((res) => setTimeout(res, 20));
    expect(uiState.drafts("p9", 1)).toEqual([]);
  });
});
