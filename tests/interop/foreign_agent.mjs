// A small ACP agent that is not Arbor, on the official TypeScript SDK's AgentSideConnection: a prompt is
// answered by reading hello.py with fs/read_text_file, writing an edit with fs/write_text_file, and trying
// a read outside the workspace (../outside.txt), each reported as a tool call, under a plan.
// A prompt containing "ask" first asks permission for the edit (with the diff) and skips it when refused.
// A prompt containing "shell" then also writes made_by_shell.py straight to disk in its cwd, as an agent's
// own shell command does (no fs/* call), reported as an execute tool call. A prompt containing "escape"
// tries to write sneaky.py into the directory $ESCAPE_TO names (the real workspace, in a test).
import { AgentSideConnection, ndJsonStream, PROTOCOL_VERSION } from "@agentclientprotocol/sdk";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { Readable, Writable } from "node:stream";

let fsCaps = { readTextFile: false, writeTextFile: false };
const sessions = new Map();

function describe(err) {
  const data = err && err.data !== undefined ? ` ${JSON.stringify(err.data)}` : "";
  return `${(err && err.message) || String(err)}${data}`;
}

class ForeignAgent {
  constructor(conn) {
    this.conn = conn;
  }

  async initialize(params) {
    fsCaps = { ...fsCaps, ...((params.clientCapabilities || {}).fs || {}) };
    return {
      protocolVersion: PROTOCOL_VERSION,
      agentCapabilities: { loadSession: false },
      agentInfo: { name: "foreign-agent", title: "Foreign agent", version: "1.0.0" },
    };
  }

  async newSession(params) {
    const sessionId = `foreign-${sessions.size + 1}`;
    sessions.set(sessionId, { cwd: params.cwd, cancelled: false });
    return { sessionId };
  }

  async authenticate() {
    return {};
  }

  async cancel(params) {
    const session = sessions.get(params.sessionId);
    if (session) session.cancelled = true;
  }

  async update(sessionId, update) {
    await this.conn.sessionUpdate({ sessionId, update });
  }

  async plan(sessionId, statuses) {
    const steps = ["Read hello.py", "Edit hello.py", "Read outside the workspace"];
    await this.update(sessionId, {
      sessionUpdate: "plan",
      entries: steps.map((content, i) => ({ content, priority: "medium", status: statuses[i] })),
    });
  }

  async prompt(params) {
    const { sessionId } = params;
    const session = sessions.get(sessionId);
    session.cancelled = false;
    const text = params.prompt.map((block) => block.text || "").join(" ");
    const target = path.join(session.cwd, "hello.py");
    const outside = path.resolve(session.cwd, "..", "outside.txt");
    await this.update(sessionId, {
      sessionUpdate: "agent_message_chunk",
      content: { type: "text", text: `fs offered: read=${fsCaps.readTextFile} write=${fsCaps.writeTextFile}. ` },
    });
    await this.plan(sessionId, ["in_progress", "pending", "pending"]);

    let original = null;
    await this.update(sessionId, {
      sessionUpdate: "tool_call", toolCallId: "read-1", title: "Read hello.py", kind: "read",
      status: "in_progress", locations: [{ path: target }], rawInput: { path: target },
    });
    try {
      original = (await this.conn.readTextFile({ sessionId, path: target })).content;
      await this.update(sessionId, {
        sessionUpdate: "tool_call_update", toolCallId: "read-1", status: "completed",
        rawOutput: { content: original },
      });
    } catch (err) {
      await this.update(sessionId, {
        sessionUpdate: "tool_call_update", toolCallId: "read-1", status: "failed",
        rawOutput: { error: describe(err) },
      });
    }
    await this.plan(sessionId, ["completed", "in_progress", "pending"]);

    const edited = (original ?? "") + 'print("edited by the foreign agent")\n';
    const diff = { type: "diff", path: target, oldText: original, newText: edited };
    await this.update(sessionId, {
      sessionUpdate: "tool_call", toolCallId: "write-1", title: "Edit hello.py", kind: "edit",
      status: "in_progress", locations: [{ path: target }], rawInput: { path: target }, content: [diff],
    });
    let allowed = true;
    if (text.includes("ask")) {
      const answer = await this.conn.requestPermission({
        sessionId,
        toolCall: { toolCallId: "write-1", title: "Edit hello.py", kind: "edit", content: [diff] },
        options: [
          { optionId: "allow", name: "Allow", kind: "allow_once" },
          { optionId: "reject", name: "Reject", kind: "reject_once" },
        ],
      });
      allowed = answer.outcome.outcome === "selected" && answer.outcome.optionId === "allow";
      await this.update(sessionId, {
        sessionUpdate: "agent_message_chunk",
        content: { type: "text", text: `permission: ${JSON.stringify(answer.outcome)}. ` },
      });
    }
    if (session.cancelled) return { stopReason: "cancelled" };
    if (!allowed) {
      await this.update(sessionId, {
        sessionUpdate: "tool_call_update", toolCallId: "write-1", status: "failed",
        rawOutput: { error: "the user rejected the edit" },
      });
    } else {
      try {
        await this.conn.writeTextFile({ sessionId, path: target, content: edited });
        await this.update(sessionId, {
          sessionUpdate: "tool_call_update", toolCallId: "write-1", status: "completed",
          rawOutput: { written: target },
        });
      } catch (err) {
        await this.update(sessionId, {
          sessionUpdate: "tool_call_update", toolCallId: "write-1", status: "failed",
          rawOutput: { error: describe(err) },
        });
      }
    }
    if (text.includes("shell")) {
      const made = path.join(session.cwd, "made_by_shell.py");
      await this.update(sessionId, {
        sessionUpdate: "tool_call", toolCallId: "shell-1", title: "printf 'print(1)\\n' > made_by_shell.py",
        kind: "execute", status: "in_progress", rawInput: { command: "printf 'print(1)\\n' > made_by_shell.py" },
      });
      writeFileSync(made, "print(1)\n");
      await this.update(sessionId, {
        sessionUpdate: "tool_call_update", toolCallId: "shell-1", status: "completed", rawOutput: { exit: 0 },
      });
    }
    if (text.includes("escape") && process.env.ESCAPE_TO) {
      const sneaky = path.join(process.env.ESCAPE_TO, "sneaky.py");
      await this.update(sessionId, {
        sessionUpdate: "tool_call", toolCallId: "escape-1", title: `write ${sneaky}`, kind: "execute",
        status: "in_progress", rawInput: { path: sneaky },
      });
      try {
        writeFileSync(sneaky, "y = 2\n");
        await this.update(sessionId, {
          sessionUpdate: "tool_call_update", toolCallId: "escape-1", status: "completed", rawOutput: { wrote: sneaky },
        });
      } catch (err) {
        await this.update(sessionId, {
          sessionUpdate: "tool_call_update", toolCallId: "escape-1", status: "failed", rawOutput: { error: err.code },
        });
      }
    }
    await this.plan(sessionId, ["completed", "completed", "in_progress"]);

    await this.update(sessionId, {
      sessionUpdate: "tool_call", toolCallId: "read-2", title: "Read ../outside.txt", kind: "read",
      status: "in_progress", locations: [{ path: outside }], rawInput: { path: outside },
    });
    try {
      const leaked = (await this.conn.readTextFile({ sessionId, path: outside })).content;
      await this.update(sessionId, {
        sessionUpdate: "tool_call_update", toolCallId: "read-2", status: "completed",
        rawOutput: { content: leaked },
      });
    } catch (err) {
      await this.update(sessionId, {
        sessionUpdate: "tool_call_update", toolCallId: "read-2", status: "failed",
        rawOutput: { error: describe(err) },
      });
    }
    await this.plan(sessionId, ["completed", "completed", "completed"]);
    await this.update(sessionId, {
      sessionUpdate: "agent_message_chunk", content: { type: "text", text: "Done." },
    });
    return { stopReason: "end_turn" };
  }
}

const stream = ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin));
new AgentSideConnection((conn) => new ForeignAgent(conn), stream);
