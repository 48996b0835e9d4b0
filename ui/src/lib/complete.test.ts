import { describe, expect, it } from "vitest";
import { asText, becomesMessage, commandMatches, mentionAt, promptCommands, takeMention } from "./complete";

describe("composer completion", () => {
  it("finds the @word before the caret, and only one", () => {
    expect(mentionAt("see @src/ma", 11)).toEqual({ start: 4, query: "src/ma" });
    expect(mentionAt("@", 1)).toEqual({ start: 0, query: "" });
    expect(mentionAt("mail me@host", 12)).toBeNull();
    expect(mentionAt("see @src done", 13)).toBeNull();
    expect(mentionAt("see @src done", 8)).toEqual({ start: 4, query: "src" });
  });

  it("puts the chosen path in place of the word, with the caret after it", () => {
    expect(takeMention("see @ma", 7, 4, "src/main.rs")).toEqual({ text: "see @src/main.rs ", caret: 17 });
    expect(takeMention("see @ma and", 7, 4, "src/main.rs")).toEqual({ text: "see @src/main.rs and", caret: 17 });
    expect(takeMention("see @mai and", 6, 4, "src/main.rs")).toEqual({ text: "see @src/main.rs and", caret: 17 });
  });

  it("offers the commands a slash starts, never once the command is whole", () => {
    const cmds = [{ name: "/goal ", hint: "" }, { name: "/goal pause", hint: "" }, { name: "/help", hint: "" }];
    expect(commandMatches("/go", cmds).map((c) => c.name)).toEqual(["/goal ", "/goal pause"]);
    expect(commandMatches("/help", cmds)).toEqual([]);
    expect(commandMatches("/goal\nmore", cmds)).toEqual([]);
    expect(commandMatches("hello", cmds)).toEqual([]);
  });
});

describe("MCP prompts as commands", () => {
  const prompts = [
    { command: "mcp__e__simple", description: "", arguments: [] },
    {
      command: "mcp__e__args",
      description: "Weather\n  for a city",
      arguments: [
        { name: "city", required: true },
        { name: "state", required: false },
      ],
    },
  ];

  it("offers the session's prompts, a space after those that take arguments", () => {
    expect(promptCommands(prompts)).toEqual([
      { name: "/mcp__e__simple", hint: "MCP prompt" },
      { name: "/mcp__e__args ", hint: "Weather for a city · city=… [state=…]" },
    ]);
  });

  it("completes them like the app's own commands", () => {
    const all = promptCommands(prompts);
    expect(commandMatches("/mcp__e", all).map((c) => c.name)).toEqual(["/mcp__e__simple", "/mcp__e__args "]);
    expect(commandMatches("/mcp__down", all)).toEqual([]);
  });

  it("sends a stored message again as text, never as a command", () => {
    expect(asText("/plan off and go")).toBe("//plan off and go");
    expect(asText("//x")).toBe("///x");
    expect(asText("plain")).toBe("plain");
  });

  it("lets Plan apply to a prompt, not to the app's own commands", () => {
    expect(becomesMessage("/mcp__e__simple")).toBe(true);
    expect(becomesMessage("//plan off, as text")).toBe(true);
    expect(becomesMessage("/goal clear")).toBe(false);
  });
});
