import { describe, expect, it, vi } from "vitest";
import { fireEvent, render, screen, waitFor } from "@testing-library/svelte";
import type { PlanComment } from "../bindings";
import type { Draft } from "../lib/comments";

// (A .svelte test file: the drafts the component binds are a rune here.)
// The revision under review, and a renderer standing in for the app's (headings, items and
// code as HTML; what it was asked to render is recorded).
const PLAN = "## Summary\nGive `greet.sh` a test.\n\n## Steps\n1. Add the test.\n2. Change the echo\n   so it ends with `!`.\n3. Run the test.\n\n```sh\nsh tests/greet_test.sh\n```\n";
const app = vi.hoisted(() => ({ rendered: [] as string[] }));
vi.mock("../bindings", () => {
  const html = (t: string) => {
    const code = t.match(/^```\w*\n([\s\S]*)\n```$/);
    if (code) return `<pre><code>${code[1]}</code></pre>`;
    const h = t.match(/^(#+) (.*)$/);
    if (h) return `<h${h[1].length}>${h[2]}</h${h[1].length}>`;
    const item = t.match(/^(\d+)\. ([\s\S]*)$/);
    if (item) return `<ol start="${item[1]}"><li>${item[2].replace(/\s*\n\s*/g, " ")}</li></ol>`;
    return `<p>${t}</p>`;
  };
  return {
    commands: {
      planRevision: async (_s: string, plan_id: string, version: number) => ({ status: "ok", data: { plan_id, version, markdown: PLAN, html: "" } }),
      renderMarkdown: async (texts: string[]) => {
        app.rendered.push(...texts);
        return { status: "ok", data: texts.map(html) };
      },
    },
  };
});

const { default: PlanComments } = await import("./PlanComments.svelte");

/** Shows the review; what it returns follows the component's bound drafts. */
function show(drafts: Draft[] = [], comments: PlanComment[] = []) {
  const props = $state({ sessionId: "s1", planId: "p1", version: 2, comments, drafts, onerror: () => {} });
  render(PlanComments, { props });
  return props;
}
const rendered = () => waitFor(() => expect(screen.getAllByTestId("markdown").every((m) => m.dataset.rendered === "yes")).toBe(true));

describe("commenting on the plan under review", () => {
  it("shows the plan rendered, one block to a heading, a paragraph, a step or a code block", async () => {
    show();
    await rendered();
    const doc = screen.getByTestId("plan-lines");
    expect(doc.querySelector("h2")?.textContent).toBe("Summary");
    expect(doc.querySelector("ol[start='2'] li")?.textContent).toBe("Change the echo so it ends with `!`.");
    expect(doc.querySelector("pre code")?.textContent).toBe("sh tests/greet_test.sh");
    // No Markdown source on screen: no `##`, no fence, no line numbers.
    expect(doc.textContent).not.toMatch(/##|```/);
    expect(app.rendered).toContain("2. Change the echo\n   so it ends with `!`.");
    const buttons = screen.getAllByRole("button", { name: /^Comment on the / });
    expect(buttons.map((b) => b.dataset.testid)).toEqual(["line-1", "line-2", "line-4", "line-5", "line-6", "line-8", "line-10"]);
    expect(buttons[4].getAttribute("aria-label")).toBe("Comment on the step “Change the echo”");
  });

  it("sends a comment on a block as the source lines it comes from, with their words", async () => {
    const props = show();
    await rendered();
    await fireEvent.click(screen.getByTestId("line-6"));
    expect(screen.getByTestId("comment-range").textContent).toBe("On “Change the echo”");
    const box = screen.getByTestId("comment-text") as HTMLTextAreaElement;
    expect(document.activeElement).toBe(box);
    await fireEvent.input(box, { target: { value: "Which echo?" } });
    await fireEvent.click(screen.getByTestId("comment-add"));
    expect(props.drafts).toEqual([{ start: 6, end: 7, text: "Which echo?", quote: "2. Change the echo\n   so it ends with `!`." }]);
    expect(screen.getByTestId("comment-drafts").textContent).toContain("On “Change the echo”: Which echo?");
  });

  it("takes everything between two blocks with Shift, from the keyboard too", async () => {
    const props = show();
    await rendered();
    const first = screen.getByTestId("line-8");
    await fireEvent.click(first);
    await fireEvent.keyDown(screen.getByTestId("line-5"), { key: "Enter", shiftKey: true });
    expect(screen.getByTestId("line-5").getAttribute("aria-pressed")).toBe("true");
    expect(screen.getByTestId("line-8").getAttribute("aria-pressed")).toBe("true");
    expect(screen.getByTestId("line-10").getAttribute("aria-pressed")).toBe("false");
    await fireEvent.input(screen.getByTestId("comment-text"), { target: { value: "Fewer steps." } });
    await fireEvent.click(screen.getByTestId("comment-add"));
    expect(props.drafts.map(({ start, end }) => [start, end])).toEqual([[5, 8]]);
  });

  it("marks the block an earlier comment was on, and names it by its words", async () => {
    const earlier: PlanComment = { id: 1, plan_id: "p1", version: 1, start: 7, end: 7, quote: "3. Run the test.", text: "Show the output.", state: "unchanged", now_at: [8, 8] };
    show([], [earlier]);
    await rendered();
    expect(screen.getByTestId("line-8").closest(".block")?.classList.contains("was")).toBe(true);
    expect(screen.getByTestId("comment-state").textContent).toContain("On v1 “Run the test.”: Show the output.");
  });
});
