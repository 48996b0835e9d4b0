// A small editor for Waymark's ACP tests, written on the official TypeScript SDK
// (@agentclientprotocol/sdk): it starts the agent, runs a program of steps against it and
// prints what it saw as JSON lines on stdout, for the Rust test that started it to judge.
//
// Usage: node client.mjs '<program as JSON>'
//
// The program:
//   { "agent": ["waymark", "--data-dir", "…", "acp", …],   the agent's command line
//     "cwd": "/abs/workspace",                               the sessions' folder
//     "connections": [[step, …], …] }                        one agent process per list
//
// Steps (the session made or loaded last is the one each step is about):
//   {"new": true, "mcp_servers": […]}   session/new in cwd, with the editor's MCP servers
//   {"load": true}                      session/load of the session made in an earlier connection
//   {"set_mode": "plan"}                session/set_mode
//   {"prompt": "text",                  session/prompt, to its answer
//    "pick": ["approve", "allow_once"], each question answered with the first of these it
//                                       offers (none offered: the question is cancelled)
//    "cancel_on": "tool_call"}          session/cancel once the first update of this kind comes
//   {"until": "available_commands_update", waits (up to 30 s) for an update of this kind whose
//    "containing": "mcp__"}             JSON has this text, one that came earlier included
//
// Printed lines: {"seen": "session", "id"}, {"seen": "update", "update"}, {"seen": "asked",
// "title", "options", "chose"}, {"seen": "stop", "reason", "cancel_ms"}, {"seen": "error",
// "step", "message"}, {"seen": "exit", "code"}.

import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const program = JSON.parse(process.argv[2]);
const print = (line) => process.stdout.write(JSON.stringify(line) + "\n");

let sessionId = null;
// Every update seen, for `until`.
const updates = [];
// What the step running now wants of the questions and updates that come.
let pick = [];
let onUpdate = () => {};

async function connection(steps) {
  const [command, ...args] = program.agent;
  const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"], cwd: program.cwd });
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  await acp
    .client({ name: "waymark-test-editor" })
    .onRequest(acp.methods.client.session.requestPermission, (ctx) => {
      const offered = ctx.params.options.map((o) => o.optionId);
      const chose = pick.find((p) => offered.includes(p)) ?? null;
      print({ seen: "asked", title: ctx.params.toolCall.title, options: offered, chose });
      return chose === null
        ? { outcome: { outcome: "cancelled" } }
        : { outcome: { outcome: "selected", optionId: chose } };
    })
    .onNotification(acp.methods.client.session.update, (ctx) => {
      print({ seen: "update", update: ctx.params.update });
      updates.push(ctx.params.update);
      onUpdate(ctx.params.update);
    })
    .connectWith(stream, async (ctx) => {
      await ctx.request(acp.methods.agent.initialize, {
        protocolVersion: acp.PROTOCOL_VERSION,
        clientCapabilities: {},
      });
      for (const step of steps) {
        try {
          await run(ctx, step);
        } catch (e) {
          print({ seen: "error", step, message: String(e?.message ?? e), data: e?.data ?? null });
        }
      }
    });
  child.stdin.end();
  print({ seen: "exit", code: await exited });
}

async function run(ctx, step) {
  if (step.new) {
    const made = await ctx.request(acp.methods.agent.session.new, {
      cwd: program.cwd,
      mcpServers: step.mcp_servers ?? [],
    });
    sessionId = made.sessionId;
    print({ seen: "session", id: sessionId, modes: made.modes ?? null });
  } else if (step.load) {
    await ctx.request(acp.methods.agent.session.load, {
      sessionId,
      cwd: program.cwd,
      mcpServers: [],
    });
    print({ seen: "loaded", id: sessionId });
  } else if (step.set_mode) {
    await ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: step.set_mode });
  } else if (step.prompt !== undefined) {
    pick = step.pick ?? [];
    let cancelledAt = null;
    onUpdate = (u) => {
      if (step.cancel_on && u.sessionUpdate === step.cancel_on && cancelledAt === null) {
        cancelledAt = Date.now();
        ctx.notify(acp.methods.agent.session.cancel, { sessionId });
      }
    };
    const answer = await ctx.request(acp.methods.agent.session.prompt, {
      sessionId,
      prompt: [{ type: "text", text: step.prompt }],
    });
    onUpdate = () => {};
    print({
      seen: "stop",
      reason: answer.stopReason,
      cancel_ms: cancelledAt === null ? null : Date.now() - cancelledAt,
    });
  } else if (step.until) {
    const found = () =>
      updates.some((u) => u.sessionUpdate === step.until && JSON.stringify(u).includes(step.containing));
    const deadline = Date.now() + 30_000;
    while (!found()) {
      if (Date.now() > deadline) throw new Error(`no ${step.until} with ${step.containing}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    print({ seen: "found", until: step.until });
  } else {
    throw new Error(`unknown step ${JSON.stringify(step)}`);
  }
}

for (const steps of program.connections) {
  await connection(steps);
}
