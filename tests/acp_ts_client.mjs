// A real ACP client, the official TypeScript SDK, driving `kimi acp`: initialize, a session in `ask` mode,
// a prompt whose edit and command come back as updates and a permission request. Prints one JSON line.
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [, , kimi, cwd, answer] = process.argv;
const child = spawn(kimi, ["acp"], { cwd, stdio: ["pipe", "pipe", "inherit"], env: process.env });
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const updates = [];
const permissions = [];
const app = acp
  .client({ name: "kimi-tests" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params.update);
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    permissions.push(params.toolCall.title);
    return { outcome: { outcome: "selected", optionId: answer } };
  });
const result = await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: {},
  });
  const session = await ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
  await ctx.request(acp.methods.agent.session.setMode, { sessionId: session.sessionId, modeId: "ask" });
  const reply = await ctx.request(acp.methods.agent.session.prompt, {
    sessionId: session.sessionId,
    prompt: [{ type: "text", text: "fix add and check it" }],
  });
  return { protocolVersion: init.protocolVersion, stopReason: reply.stopReason };
});
child.stdin.end();
await new Promise((resolve) => child.on("exit", resolve));
console.log(JSON.stringify({ ...result, updates, permissions, exitCode: child.exitCode }));
