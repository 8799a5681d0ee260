// One AG-UI run with the real client: @ag-ui/client's HttpAgent (which rejects out-of-order events).
// Input (stdin, JSON): {url, token, threadId, messages, tools, runId, resume}. Output (stdout, JSON):
// {events, messages, newMessages, result, pending, interrupts} or {error, status, payload}.
import { HttpAgent } from "@ag-ui/client";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const input = JSON.parse(Buffer.concat(chunks).toString("utf8"));

const agent = new HttpAgent({
  url: input.url,
  headers: input.token === undefined ? {} : { Authorization: `Bearer ${input.token}` },
  threadId: input.threadId,
  initialMessages: input.messages ?? [],
});
const events = [];
let finished = null;
const subscriber = {
  onEvent: ({ event }) => {
    events.push(event);
  },
  onRunFinishedEvent: (params) => {
    finished = { outcome: params.outcome, pending: params.pendingToolCallIds ?? [], interrupts: params.interrupts ?? [] };
  },
};
try {
  const { result, newMessages } = await agent.runAgent(
    { tools: input.tools ?? [], runId: input.runId, ...(input.resume ? { resume: input.resume } : {}) },
    subscriber,
  );
  process.stdout.write(
    JSON.stringify({ events, messages: agent.messages, newMessages, result: result ?? null, finished }),
  );
} catch (error) {
  process.stdout.write(
    JSON.stringify({ events, error: String(error.message ?? error), status: error.status ?? null, payload: error.payload ?? null }),
  );
}
