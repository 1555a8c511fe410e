// The official TypeScript ACP client driving `kimi acp` through a scenario, for attack tests: each prompt in
// turn, then a mode change, then a slow prompt cancelled once its command runs. Every request is raced against
// a timeout, so a frozen agent is reported ("timeout") instead of hanging the test. Every line the agent wrote
// is kept raw, to check what reached the editor. Prints one JSON line.
//   node acp_ts_scenario.mjs KIMI CWD '{"prompts": ["..."], "setMode": "ask", "cancelPrompt": "wait", "timeoutMs": 20000}'
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [, , kimi, cwd, scenarioText] = process.argv;
const scenario = JSON.parse(scenarioText);
const limit = scenario.timeoutMs ?? 20000;
const child = spawn(kimi, ["acp"], { cwd, stdio: ["pipe", "pipe", "inherit"], env: process.env });
const raw = [];
child.stdout.on("data", (chunk) => raw.push(chunk.toString("utf8")));
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
const updates = [];
const permissions = [];
const app = acp
  .client({ name: "kimi-attack-tests" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    updates.push(params.update);
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    permissions.push(params.toolCall);
    return { outcome: { outcome: "selected", optionId: "allow_once" } };
  });

function timed(promise) {
  let timer;
  const timeout = new Promise((resolve) => {
    timer = setTimeout(() => resolve("timeout"), limit);
  });
  return Promise.race([promise.then((value) => value ?? "ok", (error) => `error: ${error.message ?? error}`), timeout])
    .finally(() => clearTimeout(timer));
}

const result = await app.connectWith(stream, async (ctx) => {
  const out = { prompts: [] };
  await timed(ctx.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} }));
  const session = await timed(ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] }));
  if (typeof session !== "object") return { ...out, session };
  const sessionId = session.sessionId;
  for (const text of scenario.prompts ?? []) {
    const reply = await timed(ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: [{ type: "text", text }] }));
    out.prompts.push(typeof reply === "object" ? reply.stopReason : reply);
  }
  if (scenario.setMode) {
    const answer = await timed(ctx.request(acp.methods.agent.session.setMode, { sessionId, modeId: scenario.setMode }));
    out.setMode = typeof answer === "object" ? "answered" : answer;
  }
  if (scenario.cancelPrompt) {
    const seen = updates.length;
    const turn = timed(ctx.request(acp.methods.agent.session.prompt, {
      sessionId, prompt: [{ type: "text", text: scenario.cancelPrompt }] }));
    const started = Date.now();
    while (!updates.slice(seen).some((u) => u.sessionUpdate === "tool_call") && Date.now() - started < limit) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await new Promise((resolve) => setTimeout(resolve, 300)); // the command is running
    await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
    const reply = await turn;
    out.cancelled = typeof reply === "object" ? reply.stopReason : reply;
  }
  return out;
});
child.stdin.end();
const exited = await Promise.race([
  new Promise((resolve) => child.on("exit", () => resolve(true))),
  new Promise((resolve) => setTimeout(() => resolve(false), 10000)),
]);
if (!exited) child.kill("SIGKILL");
const line = JSON.stringify({ ...result, updates, permissions, raw: raw.join(""), exitedOnEof: exited }) + "\n";
process.stdout.write(line, () => process.exit(0)); // a pipe takes a long line in parts: exit once it is out
