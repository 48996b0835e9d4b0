// What the composer completes, as pure functions: slash commands, and `@` mentions of the
// workspace's files (the word being typed before the caret).

/** The `@word` being typed just before `caret`, if any: where it starts and what it says. */
export function mentionAt(text: string, caret: number): { start: number; query: string } | null {
  const before = text.slice(0, caret);
  const m = before.match(/(^|\s)@([^\s@]*)$/);
  if (!m || m.index === undefined) return null;
  return { start: m.index + m[1].length, query: m[2] };
}

/** `text` with the mention at `start` (up to `caret`) replaced by `@path `, and the caret
 *  after it. */
export function takeMention(text: string, caret: number, start: number, path: string): { text: string; caret: number } {
  const inserted = `@${path} `;
  const rest = text.slice(caret).replace(/^\S*/, "");
  return { text: text.slice(0, start) + inserted + rest.replace(/^ /, ""), caret: start + inserted.length };
}

/** A command as the list shows it: `name` is what taking it puts in the composer, `label`
 *  how it reads when that differs (`/goal <objective>` for `/goal `). */
export type Command = { name: string; hint: string; label?: string };

/** A server's prompt as the list shows it: its command, and what the server says it does
 *  (its arguments when it says nothing). */
type Prompt = { command: string; description: string; arguments: { name: string; required: boolean }[] };

/** A session's prompts, as commands (`/mcp__server__prompt `, with a space to type the
 *  arguments after when it takes any). */
export function promptCommands(prompts: Prompt[]): Command[] {
  return prompts.map((p) => {
    const args = p.arguments.map((a) => (a.required ? `${a.name}=…` : `[${a.name}=…]`)).join(" ");
    const about = p.description.replace(/\s+/g, " ").trim();
    return {
      name: `/${p.command}${p.arguments.length ? " " : ""}`,
      hint: [about || "MCP prompt", args].filter(Boolean).join(" · "),
    };
  });
}

/** A stored message, to send again as the text it is: one that starts with `/` was sent as
 *  text (typed with `//`, or a prompt's text), so it is escaped again, never run as a
 *  command. */
export function asText(message: string): string {
  return message.startsWith("/") ? `/${message}` : message;
}

/** Whether text that starts with `/` still goes to the model as a message (`//…`, sent as
 *  text, or an MCP prompt), so "next message enters Plan" applies to it. */
export function becomesMessage(text: string): boolean {
  return text.startsWith("//") || text.startsWith("/mcp__");
}

/** The commands `text` is the beginning of (none once it is a whole command or has a line
 *  break). */
export function commandMatches(text: string, commands: Command[]): Command[] {
  if (!text.startsWith("/") || text.includes("\n")) return [];
  return commands.filter((c) => c.name.startsWith(text) && c.name !== text);
}
