import { describe, expect, it } from "vitest";
import { diffLines, imageSource, mcpName, relative, shellResult, summary } from "./tools";

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

  it("says what each call was asked: the command, the path, the pattern, a patch's files", () => {
    const t = (name: string, args: unknown, changes = [] as ReturnType<typeof change>[]) => summary({ name, args: args as never, changes }, "/ws");
    expect(t("bash", { command: "cargo test\n--more" })).toBe("cargo test");
    expect(t("read_file", { path: "/ws/src/lib.rs" })).toBe("src/lib.rs");
    expect(t("search", { pattern: "fn main", path: "/ws/src" })).toBe("fn main  in src");
    expect(t("apply_patch", { patch: "…" }, [change("/ws/a.rs"), change("b.rs")])).toBe("a.rs, b.rs");
    expect(t("apply_patch", { patch: "…" })).toBe("a patch");
    expect(t("mcp_tool", { q: "x\ny" })).toBe("x");
    expect(t("odd", [1, 2])).toBe("");
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
