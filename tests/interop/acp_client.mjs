// A client nobody at Arbor wrote the protocol code of: the official ACP TypeScript SDK's ClientSideConnection
// driving `arbor acp`. Usage: node acp_client.mjs SCENARIO WORKSPACE -- BACKEND_COMMAND...
// Scenarios: cancel (stop the turn once an edit is done), allow (answer "apply"), reject (answer "discard").
// Prints one JSON object: what the client saw (permission requests, fs writes, ext notifications, responses).
import { spawn } from "node:child_process";
import { writeFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import { ClientSideConnection, PROTOCOL_VERSION, ndJsonStream } from "@agentclientprotocol/sdk";

const [scenario, workspace, dashdash, ...command] = process.argv.slice(2);
if (dashdash !== "--" || command.length === 0) throw new Error("usage: SCENARIO WORKSPACE -- COMMAND...");

const seen = { permissions: [], writes: [], extNotifications: [], updates: [], responses: [] };
const backend = spawn(command[0], command.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
let editDone;
const edited = new Promise((resolve) => (editDone = resolve));
let cancelled = false;

const client = {
  async requestPermission(params) {
    seen.permissions.push({ title: params.toolCall.title, options: params.options.map((o) => o.optionId) });
    if (cancelled) return { outcome: { outcome: "cancelled" } };
    const wanted = scenario === "allow" ? "apply" : "discard";
    return { outcome: { outcome: "selected", optionId: wanted } };
  },
  async sessionUpdate(params) {
    const update = params.update;
    seen.updates.push(update.sessionUpdate);
    if (update.sessionUpdate === "tool_call_update" && update.status === "completed") editDone();
  },
  async writeTextFile(params) {
    seen.writes.push(params.path);
    writeFileSync(params.path, params.content);
    return {};
  },
  async readTextFile() {
    throw new Error("this client serves no reads");
  },
  async extNotification(method, params) {
    seen.extNotifications.push(method);
  },
};

const stream = ndJsonStream(Writable.toWeb(backend.stdin), Readable.toWeb(backend.stdout));
const connection = new ClientSideConnection(() => client, stream);
const init = await connection.initialize({
  protocolVersion: PROTOCOL_VERSION,
  clientCapabilities: { fs: { readTextFile: false, writeTextFile: true } },
});
seen.agent = init.agentInfo?.name;
const { sessionId } = await connection.newSession({ cwd: workspace, mcpServers: [] });
const turn = connection.prompt({ sessionId, prompt: [{ type: "text", text: "Make greet say Hi" }] });
if (scenario === "cancel") {
  await edited;
  cancelled = true;
  await connection.cancel({ sessionId });
}
const response = await turn;
seen.responses.push({ stopReason: response.stopReason, meta: response._meta ?? null });
if (scenario === "cancel") {
  const again = await connection.prompt({ sessionId, prompt: [{ type: "text", text: "Anything else?" }] });
  seen.responses.push({ stopReason: again.stopReason, meta: again._meta ?? null });
}
process.stdout.write(JSON.stringify(seen) + "\n");
backend.stdin.end();
backend.kill("SIGTERM");
process.exit(0);
