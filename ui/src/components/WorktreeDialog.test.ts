import { describe, expect, it, vi } from "vitest";
import { fireEvent, render, screen } from "@testing-library/svelte";

// A worktree with one changed file; the merge records the message it was given.
const app = vi.hoisted(() => ({ merged: [] as (string | null)[], styles: [] as string[] }));
vi.mock("../bindings", () => {
  const view = { name: "feature", branch: "waymark/feature", path: "/data/wt/feature", repo: "/w", base_branch: "main", base_commit: "0123456789abcdef", state: "active", changed: [{ path: "a.txt", change: "added" }], commits: 0, included: [], merge_message: "Add the feature file" };
  const ok = <T,>(data: T) => Promise.resolve({ status: "ok" as const, data });
  return {
    commands: {
      worktree: () => ok(view),
      worktreeDiff: () => ok({ diff: "+a\n", base: "0123456789abcdef", tree: "fedcba9876543210" }),
      worktreeMerge: (_id: string, _reviewed: unknown, message: string | null, style: string) => (
        app.merged.push(message), app.styles.push(style), ok({ committed: null, merged: "m", style, base_branch: "main", files: ["a.txt"] })
      ),
    },
  };
});

const { default: Dialog } = await import("./WorktreeDialog.svelte");

describe("Review & merge", () => {
  it("shows the message the merge would write, and sends what the user made of it", async () => {
    render(Dialog, { sessionId: "s", onclose: () => {}, ondone: () => {} });
    const box = (await screen.findByTestId("worktree-message")) as HTMLTextAreaElement;
    expect(box.value).toBe("Add the feature file");
    await fireEvent.input(box, { target: { value: "Add the feature file, as reviewed" } });
    await fireEvent.click(screen.getByTestId("worktree-merge"));
    await vi.waitFor(() => expect(app.merged).toEqual(["Add the feature file, as reviewed"]));
    // Read again after the merge: the user's text stays.
    expect(box.value).toBe("Add the feature file, as reviewed");
    expect(app.styles).toEqual(["merge"]);
  });

  it("squashes when asked, and says so", async () => {
    app.merged = [];
    app.styles = [];
    const said: string[] = [];
    render(Dialog, { sessionId: "s", onclose: () => {}, ondone: (t: string) => said.push(t) });
    await fireEvent.click(await screen.findByTestId("worktree-style-squash"));
    expect(screen.getByTestId("worktree-merge").textContent).toBe("Squash into main");
    await fireEvent.click(screen.getByTestId("worktree-merge"));
    await vi.waitFor(() => expect(app.styles).toEqual(["squash"]));
    expect(said).toEqual(["Squashed into main as one commit (1 file)."]);
  });
});
