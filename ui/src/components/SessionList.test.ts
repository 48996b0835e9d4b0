import { beforeEach, describe, expect, it, vi } from "vitest";
import { fireEvent, render, screen, waitFor, within } from "@testing-library/svelte";
import SessionList from "./SessionList.svelte";
import { folderHeadings, folderKey } from "../lib/folders";
import type { SessionSummary } from "../lib/types";

const listed = (id: string, workspace: string, extra: Partial<SessionSummary> = {}): SessionSummary => ({
  id, workspace, title: id, created_at: 0, updated_at: 0, interaction_mode: "default", permission_mode: "ask", model: null, queued: 0, pending_questionnaire: null, ...extra,
});
const list = (sessions: SessionSummary[]) =>
  render(SessionList, { sessions, currentId: null, onopen: () => {}, onnew: () => {}, onnewin: () => {}, onrename: async () => true, ondelete: () => {} });
// The app's search of what was said in the sessions: each test says what it answers.
const app = vi.hoisted(() => ({ searchSessions: vi.fn<(query: string) => Promise<{ status: "ok"; data: string[] }>>() }));
vi.mock("../bindings", () => ({ commands: { searchSessions: app.searchSessions } }));
beforeEach(() => {
  app.searchSessions.mockReset();
  app.searchSessions.mockResolvedValue({ status: "ok", data: [] });
});

/** Each heading with the sessions under it. */
const headings = () =>
  screen.getAllByTestId("folder-heading").map((h) => {
    const ul = h.closest(".ws")?.nextElementSibling as HTMLElement;
    return [h.textContent, within(ul).getAllByTestId("session").map((b) => b.dataset.sessionId)];
  });

describe("the session list's headings", () => {
  it("puts a session in a worktree under its project's heading, however the app spells the folder", () => {
    // The app names a worktree at the project's top with a trailing "/".
    const tree = { worktree: "waymark/try-it", project: "/home/ada/app/" };
    list([listed("plain", "/home/ada/app"), listed("tree", "/data/worktrees/try-it", tree), listed("other", "/home/ada/site")]);
    expect(headings()).toEqual([
      ["app", ["plain", "tree"]],
      ["site", ["other"]],
    ]);
  });

  it("tells apart two projects of the same name by the folder above", () => {
    list([listed("a", "/home/ada/work/app"), listed("b", "/home/ada/old/app"), listed("c", "/home/ada/site")]);
    expect(headings()).toEqual([
      ["work/app", ["a"]],
      ["old/app", ["b"]],
      ["site", ["c"]],
    ]);
    // The full path is in the heading's tooltip.
    expect(screen.getAllByTestId("folder-heading")[0].parentElement?.title).toBe("/home/ada/work/app");
  });
});

describe("folders", () => {
  it("spells a folder one way", () => {
    expect(folderKey("/repo/")).toBe("/repo");
    expect(folderKey("/repo")).toBe("/repo");
    expect(folderKey("/")).toBe("/");
    expect(folderKey("C:\\code\\app\\")).toBe("C:\\code\\app");
  });

  it("names each folder by as much of its path as it takes to be told apart", () => {
    const named = folderHeadings(["/a/x/app", "/b/x/app", "/c/app", "/d/site"]);
    expect([...named.values()]).toEqual(["a/x/app", "b/x/app", "c/app", "site"]);
  });
});

describe("searching the sessions", () => {
  const sessions = [
    listed("a", "/w/app", { title: "Fix the parser" }),
    listed("b", "/w/app", { title: "Tidy up" }),
    listed("c", "/w/site", { title: "Retry notes" }),
  ];
  const shownIds = () => screen.queryAllByTestId("session").map((b) => b.dataset.sessionId);
  const type = (text: string) => fireEvent.input(screen.getByTestId("session-search"), { target: { value: text } });
  const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it("finds a session by what was said in it once typing pauses, and says so", async () => {
    app.searchSessions.mockImplementation(async (q) => ({ status: "ok", data: q === "retry" ? ["b", "c"] : [] }));
    list(sessions);
    for (const text of ["r", "re", "ret", "retry"]) await type(text);
    // At once, by title; then by the messages too.
    expect(shownIds()).toEqual(["c"]);
    expect(screen.queryByTestId("search-hint")).toBeNull();
    await waitFor(() => expect(shownIds()).toEqual(["b", "c"]));
    expect(app.searchSessions.mock.calls).toEqual([["retry"]]);
    expect(screen.getByTestId("search-hint").textContent).toBe("Also matching message text");
    // Cleared with Escape, as a search field is: every session, no hint.
    await fireEvent.keyDown(screen.getByTestId("session-search"), { key: "Escape" });
    expect((screen.getByTestId("session-search") as HTMLInputElement).value).toBe("");
    expect(shownIds()).toEqual(["a", "b", "c"]);
    expect(screen.queryByTestId("search-hint")).toBeNull();
  });

  it("does not search the messages for one letter, nor hint when the titles found them all", async () => {
    app.searchSessions.mockImplementation(async () => ({ status: "ok", data: ["c"] }));
    list(sessions);
    await type("n");
    await pause(300);
    expect(app.searchSessions).not.toHaveBeenCalled();
    await type("notes");
    await waitFor(() => expect(app.searchSessions).toHaveBeenCalledWith("notes"));
    await pause(0);
    expect(shownIds()).toEqual(["c"]);
    expect(screen.queryByTestId("search-hint")).toBeNull();
  });

  it("keeps the newest query's answer when an older one comes back late", async () => {
    const pending = new Map<string, (ids: string[]) => void>();
    app.searchSessions.mockImplementation(
      (q) => new Promise((resolve) => pending.set(q, (ids) => resolve({ status: "ok", data: ids }))),
    );
    list(sessions);
    await type("zz");
    await waitFor(() => expect(pending.has("zz")).toBe(true));
    await type("zzz");
    await waitFor(() => expect(pending.has("zzz")).toBe(true));
    pending.get("zzz")?.(["b"]);
    await waitFor(() => expect(shownIds()).toEqual(["b"]));
    pending.get("zz")?.(["a", "b"]);
    await pause(0);
    expect(shownIds()).toEqual(["b"]);
  });

  it("filters by title alone when the search fails", async () => {
    app.searchSessions.mockRejectedValue(new Error("no app"));
    list(sessions);
    await type("tidy");
    await waitFor(() => expect(app.searchSessions).toHaveBeenCalled());
    await pause(0);
    expect(shownIds()).toEqual(["b"]);
  });
});
