import { describe, expect, it, vi } from "vitest";
import { fireEvent, render, screen, within } from "@testing-library/svelte";

// Two servers: one that cannot start, one ready with three tools (one the server marks
// read-only, one the user vouched for). Adding records its arguments; a name taken is refused.
const app = vi.hoisted(() => ({ added: [] as unknown[][], vouched: [] as unknown[][] }));
vi.mock("../bindings", () => {
  const reason = "cannot start `/nonexistent/waymark-test-server`: No such file or directory (os error 2)\nthen it was tried again";
  const tool = (name: string, read_only: boolean, vouched: boolean, description = "") => ({ name, model_name: `mcp__everything__${name}`, description, read_only, vouched });
  const servers = [
    { name: "broken", state: "failed", reason, target: "/nonexistent/waymark-test-server", tools: [] },
    {
      name: "everything",
      state: "ready",
      target: "mcp-server-everything stdio",
      tools: [tool("echo", false, false, "Echoes the <b>input</b> back"), tool("get-sum", true, false), tool("get-env", true, true)],
    },
  ];
  const ok = <T,>(data: T) => Promise.resolve({ status: "ok" as const, data });
  return {
    commands: {
      mcpServers: () => ok(servers),
      mcpAddServer: (name: string, command: string[], url: string | null, env: string[], headers: string[]) => {
        app.added.push([name, command, url, env, headers]);
        return name === "everything"
          ? Promise.resolve({ status: "error" as const, error: { code: "invalid_settings", message: "a server named `everything` is already configured; remove it first", setting: "mcp_servers.everything" } })
          : ok(null);
      },
      mcpSetReadOnly: (name: string, tool: string, on: boolean) => {
        app.vouched.push([name, tool, on]);
        return ok(null);
      },
      mcpSetEnabled: () => ok(null),
      mcpRemoveServer: () => ok(null),
    },
  };
});

const { default: ToolServers } = await import("./ToolServers.svelte");

describe("Tool servers", () => {
  it("lists each server with its target, its state, its tool count and why it failed, in full", async () => {
    render(ToolServers, {});
    const broken = await screen.findByTestId("tool-server-broken");
    expect(within(broken).getByTestId("tool-server-state").textContent).toBe("failed");
    expect(within(broken).getByTestId("tool-server-target").textContent).toBe("/nonexistent/waymark-test-server");
    const reason = within(broken).getByTestId("tool-server-reason");
    expect(reason.textContent).toBe("cannot start `/nonexistent/waymark-test-server`: No such file or directory (os error 2)\nthen it was tried again");
    expect(reason.getAttribute("role")).toBe("alert");
    expect(within(broken).queryByTestId("tool-server-tools")).toBeNull();

    const ready = screen.getByTestId("tool-server-everything");
    expect(within(ready).getByTestId("tool-server-state").textContent).toBe("ready");
    expect(within(ready).getByTestId("tool-server-tools").textContent).toBe("3 tools");
    expect(within(ready).queryByTestId("tool-server-reason")).toBeNull();
  });

  it("lists a server's tools as text, with the read-only mark the user may vouch for", async () => {
    render(ToolServers, {});
    const ready = await screen.findByTestId("tool-server-everything");
    const details = ready.querySelector("details") as HTMLDetailsElement;
    details.open = true;
    await fireEvent(details, new Event("toggle"));
    const row = (name: string) => ready.querySelector(`[data-tool="${name}"]`) as HTMLElement;
    expect(row("echo").textContent).toContain("Echoes the <b>input</b> back");
    expect(ready.querySelector("b")).toBeNull();
    const box = (name: string) => within(row(name)).getByTestId("tool-read-only") as HTMLInputElement;
    // The server's own mark: checked, and not the user's to take away.
    expect([box("get-sum").checked, box("get-sum").disabled, box("get-sum").title]).toEqual([true, true, "the server marks it read-only"]);
    expect([box("get-env").checked, box("get-env").disabled]).toEqual([true, false]);
    expect([box("echo").checked, box("echo").disabled]).toEqual([false, false]);
    await fireEvent.click(box("echo"));
    await vi.waitFor(() => expect(app.vouched).toEqual([["everything", "echo", true]]));
  });

  it("adds a server from a command line, quotes kept, and says a refusal beside the form", async () => {
    const changed = vi.fn();
    render(ToolServers, { onchanged: changed });
    await screen.findByTestId("tool-server-everything");
    await fireEvent.input(screen.getByTestId("add-server-name"), { target: { value: "files" } });
    await fireEvent.input(screen.getByTestId("add-server-command"), { target: { value: 'npx  server-fs "/home/me/My Projects" ""' } });
    await fireEvent.input(screen.getByTestId("add-server-env"), { target: { value: "LEVEL=debug\n\n  TOKEN=${FS_TOKEN}  " } });
    await fireEvent.click(screen.getByTestId("add-server-submit"));
    // Once added, the form is emptied for the next one.
    await vi.waitFor(() => expect((screen.getByTestId("add-server-name") as HTMLInputElement).value).toBe(""));
    expect(changed).toHaveBeenCalledTimes(1);
    expect(app.added.at(-1)).toEqual(["files", ["npx", "server-fs", "/home/me/My Projects", ""], null, ["LEVEL=debug", "TOKEN=${FS_TOKEN}"], []]);

    await fireEvent.input(screen.getByTestId("add-server-name"), { target: { value: "everything" } });
    await fireEvent.input(screen.getByTestId("add-server-url"), { target: { value: "https://example.com/mcp" } });
    await fireEvent.click(screen.getByTestId("add-server-submit"));
    const said = await screen.findByTestId("add-server-error");
    expect(said.textContent).toBe("a server named `everything` is already configured; remove it first");
    expect(app.added.at(-1)).toEqual(["everything", [], "https://example.com/mcp", [], []]);
    expect(changed).toHaveBeenCalledTimes(1);

    // A quote left open is said before anything is sent.
    await fireEvent.input(screen.getByTestId("add-server-command"), { target: { value: 'npx "unclosed' } });
    await fireEvent.click(screen.getByTestId("add-server-submit"));
    await vi.waitFor(() => expect(screen.getByTestId("add-server-error").textContent).toContain("not closed"));
    expect(app.added).toHaveLength(2);
  });

  it("tells the page while the add form holds a server not yet added, and says it acts at once", async () => {
    const draft = vi.fn();
    render(ToolServers, { ondraft: draft });
    await screen.findByTestId("tool-server-everything");
    expect(draft).toHaveBeenLastCalledWith(false);
    expect(screen.getByTestId("add-server-when").textContent).toBe("Adds and starts it at once; the page's Save is not needed.");
    await fireEvent.input(screen.getByTestId("add-server-url"), { target: { value: "https://example.com/mcp" } });
    await vi.waitFor(() => expect(draft).toHaveBeenLastCalledWith(true));
    await fireEvent.input(screen.getByTestId("add-server-name"), { target: { value: "remote" } });
    await fireEvent.click(screen.getByTestId("add-server-submit"));
    // Added: the form is empty again, and nothing is left to lose.
    await vi.waitFor(() => expect(draft).toHaveBeenLastCalledWith(false));
    expect(app.added.at(-1)).toEqual(["remote", [], "https://example.com/mcp", [], []]);
  });
});
