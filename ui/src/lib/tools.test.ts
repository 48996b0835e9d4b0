import { describe, expect, it } from "vitest";
import { clip, diffLines, headline, headlineText, imageSource, mcpName, outcome, relative, shellResult } from "./tools";
import type { ToolItem } from "./session";

const change = (path: string) => ({ path, op: "modify", diff: null, note: null });

describe("tool calls as the transcript reads them", () => {
  it("names paths under the workspace relative to it, and others as given", () => {
    expect(relative("/ws/src/main.rs", "/ws")).toBe("src/main.rs");
    expect(relative("/ws/src/main.rs", "/ws/")).toBe("src/main.rs");
    expect(relative("/ws", "/ws")).toBe(".");
    expect(relative("/wsx/a", "/ws")).toBe("/wsx/a");
    expect(relative("notes/a.txt", "/ws")).toBe("notes/a.txt");
    expect(relative("/ws/a", null)).toBe("/ws/a");
    // The session's own plan file, by its name.
    expect(relative("/home/u/.local/share/waymark/sessions/s-1x/artifacts/plan.md", "/ws")).toBe("plan.md");
  });

  it("says in words what each call did, paths relative to the workspace", () => {
    const cases: [string, unknown, string][] = [
      ["read_file", { path: "/ws/src/main.rs" }, "Read src/main.rs"],
      ["list_dir", { path: "/ws/src" }, "Listed src/"],
      ["list_dir", { path: "/ws" }, "Listed the workspace"],
      ["glob", { pattern: "**/*.rs", path: "/ws/crates" }, "Found files matching `**/*.rs` in crates"],
      ["grep", { pattern: "foo", path: "/ws/src" }, "Searched for `foo` in src"],
      ["grep", { pattern: "foo" }, "Searched for `foo`"],
      ["write", { path: "/ws/notes.md", content: "x" }, "Wrote notes.md"],
      ["edit", { path: "/ws/src/a.rs" }, "Edited src/a.rs"],
      ["multiedit", { path: "/ws/src/a.rs", edits: [{}, {}, {}] }, "Edited src/a.rs in 3 places"],
      ["append", { path: "log.txt" }, "Appended to log.txt"],
      ["apply_patch", { patch: "--- a/x.rs\n+++ b/x.rs\n@@ -1 +1 @@\n-a\n+b\n--- a/gone.rs\n+++ /dev/null\n" }, "Patched x.rs, gone.rs"],
      ["apply_patch", { patch: "junk" }, "Applied a patch"],
      ["bash", { command: "cargo test" }, "Ran `cargo test`"],
      ["create_goal", { objective: "Ship it" }, "Set the goal"],
      ["get_goal", {}, "Checked the goal"],
      ["update_goal", { mode: "status", status: "complete", message: "all green" }, "Marked the goal complete"],
      ["update_goal", { mode: "status", status: "blocked", message: "Which port should it use?" }, "Asked you for help: Which port should it use?"],
      ["update_goal", { mode: "token_budget", token_budget: 20000 }, "Set the goal's token budget to 20,000"],
      ["EnterPlanMode", { reason: "big change" }, "Asked you whether to plan first"],
      ["ExitPlanMode", {}, "Submitted the plan for review"],
      ["tool_search", { query: "open an issue" }, "Looked for tools matching `open an issue`"],
      ["list_mcp_resources", { server: "everything" }, "Listed the resources of everything"],
      ["list_mcp_resources", {}, "Listed the tool servers' resources"],
      ["read_mcp_resource", { server: "everything", uri: "test://static/1" }, "Read `test://static/1` from everything"],
      ["mcp__everything__echo", { message: "hi" }, "Called `echo` on everything"],
      ["take_note", { text: "remember\nthis" }, "Used `take_note`: `remember …`"],
      ["odd", [1, 2], "Used `odd`"],
    ];
    for (const [name, args, words] of cases) {
      const parts = headline({ name, args: args as never, changes: [], status: "ok", output: "" }, "/ws");
      expect(headlineText(parts), name).toBe(words);
    }
  });

  it("keeps the tools' own names out of the headlines of the tools it knows", () => {
    const names = ["read_file", "list_dir", "glob", "grep", "write", "edit", "multiedit", "append", "apply_patch", "bash", "create_goal", "get_goal", "update_goal", "EnterPlanMode", "ExitPlanMode", "tool_search", "list_mcp_resources", "read_mcp_resource"];
    for (const name of names) {
      for (const status of ["running", "ok"] as const) {
        const text = headlineText(headline({ name, args: { path: "/ws/a", pattern: "p", command: "ls", mode: "status", status: "blocked" } as never, changes: [], status, output: "" }, "/ws"));
        expect(text, name).not.toContain(name);
      }
    }
    expect(headlineText(headline({ name: "mcp__everything__echo", args: {}, changes: [], status: "ok", output: "" }, null))).not.toContain("mcp__");
  });

  it("says what a running call is doing", () => {
    const running = (name: string, args: unknown) => headlineText(headline({ name, args: args as never, changes: [], status: "running", output: "" }, "/ws"));
    expect(running("bash", { command: "cargo test" })).toBe("Running `cargo test`…");
    expect(running("read_file", { path: "/ws/src/main.rs" })).toBe("Reading src/main.rs…");
    expect(running("mcp__everything__trigger-long-running-operation", {})).toBe("Calling `trigger-long-running-operation` on everything…");
    expect(running("ExitPlanMode", {})).toBe("Submitting the plan for review…");
  });

  it("names a patch's files from what it changed, and a plan that went to work unreviewed", () => {
    const changed = [change("/ws/a.rs"), change("b.rs"), change("/ws/c.rs"), change("/ws/d.rs"), change("/ws/e.rs")];
    expect(headlineText(headline({ name: "apply_patch", args: { patch: "…" }, changes: changed, status: "ok", output: "" }, "/ws"))).toBe("Patched a.rs, b.rs, c.rs and 2 more");
    const auto = "The plan was frozen and plan mode ended WITHOUT review: the session runs in auto permission mode…";
    expect(headlineText(headline({ name: "ExitPlanMode", args: {}, changes: [], status: "ok", output: auto }, "/ws"))).toBe("Submitted the plan, which auto mode starts without review");
  });

  it("cuts a command to one line of a readable length", () => {
    expect(clip("cargo test\n--more", 80)).toBe("cargo test …");
    expect(clip("  ls -la  ", 80)).toBe("ls -la");
    const long = `echo ${"x".repeat(200)}`;
    const cut = clip(long, 80);
    expect(cut).toHaveLength(80);
    expect(cut.endsWith("…")).toBe(true);
    const bash = headlineText(headline({ name: "bash", args: { command: `${long}\necho two` }, changes: [], status: "ok", output: "" }, null));
    expect(bash.split("\n")).toHaveLength(1);
    expect(bash.length).toBeLessThan(100);
  });

  it("says how a call ended, and only bad news in red", () => {
    const ended = (p: Partial<ToolItem>) => outcome({ name: "read_file", args: {}, status: "ok", output: "", ...p });
    expect(ended({ status: "running" })).toEqual({ label: null, bad: false });
    expect(ended({})).toEqual({ label: "ok", bad: false });
    expect(ended({ status: "denied", output: "Plan mode: `write` is not allowed." })).toEqual({ label: "denied", bad: true });
    expect(ended({ status: "error", output: "no such file" })).toEqual({ label: "error", bad: true });
    // A command's exit code; a non-zero one is bad news.
    expect(ended({ name: "bash", output: "hi\n[exit code: 0]" })).toEqual({ label: "exit 0", bad: false });
    expect(ended({ name: "bash", status: "error", output: "boom\n[exit code: 3]" })).toEqual({ label: "exit 3", bad: true });
    expect(ended({ name: "bash", status: "error", output: "…\n[timed out after 120000 ms; the command and its child processes were killed]" })).toEqual({ label: "timed out", bad: true });
  });

  it("says a call the user stopped was stopped, not that it failed", () => {
    const ended = (name: string, output: string) => outcome({ name, args: {}, status: "error", output });
    const stopped = { label: "stopped", bad: false };
    expect(ended("bash", "partial\n[stopped by the user; the command and its child processes were killed]")).toEqual(stopped);
    expect(ended("grep", "[stopped by the user; `grep` did not stop by itself in time and was abandoned]")).toEqual(stopped);
    expect(ended("mcp__everything__echo", "MCP server `everything`: stopped by the user; the server was told to cancel the call")).toEqual(stopped);
    expect(ended("read_mcp_resource", "MCP server `everything`: stopped")).toEqual(stopped);
    expect(ended("edit", "not run: the user stopped the turn")).toEqual(stopped);
    expect(ended("edit", "not run: an earlier tool call ended the turn")).toEqual({ label: "not run", bad: false });
    // Words a tool merely returned do not make a stop.
    expect(ended("read_file", "the log says [stopped by the user; …] somewhere\nand goes on")).toEqual({ label: "error", bad: true });
  });

  it("never shows the agent's question about its goal as refused", () => {
    const blocked = (status: ToolItem["status"]) => outcome({ name: "update_goal", args: { mode: "status", status: "blocked", message: "Which port?" }, status, output: "" });
    expect(blocked("ok")).toEqual({ label: null, bad: false });
    expect(blocked("denied")).toEqual({ label: "not sent", bad: false });
  });

  it("takes a shell command's exit code off its output", () => {
    expect(shellResult("hi\n[exit code: 0]")).toEqual({ body: "hi", code: 0 });
    expect(shellResult("boom\n[exit code: 127]\n")).toEqual({ body: "boom", code: 127 });
    expect(shellResult("[exit code: 3]")).toEqual({ body: "", code: 3 });
    expect(shellResult("no code here")).toEqual({ body: "no code here", code: null });
  });

  it("reads a unified diff's lines by what they do", () => {
    const kinds = diffLines("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n").map((l) => l.kind);
    expect(kinds).toEqual(["head", "head", "hunk", "same", "del", "add"]);
    // Inside a hunk, lines starting with `---` and `+++` are changes, not headers; after it,
    // the next file's headers are headers again.
    const two = diffLines("--- a/x\n+++ b/x\n@@ -1 +1 @@\n--- old\n+++ new\n--- a/y\n+++ b/y\n@@ -0,0 +1 @@\n+y\n");
    expect(two.map((l) => l.kind)).toEqual(["head", "head", "hunk", "del", "add", "head", "head", "hunk", "add"]);
  });

  it("reads an MCP tool's name as its server and its own name", () => {
    expect(mcpName("mcp__everything__get-tiny-image")).toEqual({ server: "everything", tool: "get-tiny-image" });
    // A server's name never holds `__`; the tool's may.
    expect(mcpName("mcp__gh__list__all")).toEqual({ server: "gh", tool: "list__all" });
    expect(mcpName("mcp__fs-2__read_file_3a4b5c6d")).toEqual({ server: "fs-2", tool: "read_file_3a4b5c6d" });
    expect(mcpName("bash")).toBeNull();
    expect(mcpName("mcp__only")).toBeNull();
    expect(mcpName("xmcp__a__b")).toBeNull();
  });

  it("shows only the image types a page can safely load, as data URLs", () => {
    expect(imageSource({ mime: "image/png", data: "iVBORw0KGgo=" })).toEqual({ src: "data:image/png;base64,iVBORw0KGgo=" });
    expect(imageSource({ mime: "IMAGE/WEBP", data: "UklG\nRg==" })).toEqual({ src: "data:image/webp;base64,UklGRg==" });
    expect(imageSource({ mime: "image/svg+xml", data: "PHN2Zz4=" })).toEqual({ refused: "image of type image/svg+xml not shown" });
    expect(imageSource({ mime: "text/html", data: "PGI+" })).toEqual({ refused: "image of type text/html not shown" });
    expect("refused" in imageSource({ mime: "image/gif", data: 'x" onerror="alert(1)' })).toBe(true);
  });
});
