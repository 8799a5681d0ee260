// A conversation with the real AI SDK chat: `ai`'s AbstractChat (useChat's framework-free core, here
// with a plain state) on a DefaultChatTransport, as a page would drive it.
// Input (stdin, JSON): {url, token, chatId, prompt, flow, tools?, outputs?, approvals?, gate?}
//   flow "chat":      send `prompt`; a front-end tool call (`tools` go in the body) gets
//                     `outputs[toolName]` by addToolOutput (onToolCall); answer each approval request
//                     in turn with the next of `approvals` ({approved, reason?}) by
//                     addToolApprovalResponse. sendAutomaticallyWhen sends the messages on when
//                     either is complete (lastAssistantMessageIsCompleteWithToolCalls /
//                     lastAssistantMessageIsCompleteWithApprovalResponses), as a page would set it.
//   flow "reconnect": send `prompt`, stop the chat once the first part arrived (the stream is dropped),
//                     then resumeStream (resume: the transport's GET), and once the replay reached
//                     the call's input, open the FIFO `gate` for writing (the server's tool returns).
//   flow "get":       only reconnectToStream (the GET): {status, chunks} (status 204: null stream).
// Output (stdout, JSON): {requests: [{body, status, chunks}], messages, errors}.
import { writeFileSync } from "node:fs";
import {
  AbstractChat,
  DefaultChatTransport,
  isToolUIPart,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
} from "ai";

const stdin = [];
for await (const chunk of process.stdin) stdin.push(chunk);
const input = JSON.parse(Buffer.concat(stdin).toString("utf8"));

const requests = [];
const errors = [];
let onChunk = () => {};

// Every request the transport makes (POST and GET), with the parts its response brought.
const recordingFetch = async (url, init) => {
  const record = { method: init?.method ?? "GET", body: init?.body ? JSON.parse(init.body) : null, chunks: [] };
  requests.push(record);
  const response = await fetch(url, init);
  record.status = response.status;
  return response;
};

class Transport extends DefaultChatTransport {
  processResponseStream(stream) {
    const record = requests.at(-1);
    return super.processResponseStream(stream).pipeThrough(
      new TransformStream({
        transform(chunk, controller) {
          record.chunks.push(chunk);
          controller.enqueue(chunk);
          onChunk(chunk, record);
        },
      }),
    );
  }
}

class State {
  status = "ready";
  error = undefined;
  messages = [];
  pushMessage = (message) => {
    this.messages = [...this.messages, message];
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index, message) => {
    this.messages = this.messages.map((old, i) => (i === index ? message : old));
  };
  snapshot = (thing) => structuredClone(thing);
}

let finished = () => {};
const nextFinish = () => new Promise((resolve) => (finished = resolve));

class Chat extends AbstractChat {
  constructor(options) {
    super({ ...options, state: new State() });
  }
}

const transport = new Transport({
  api: input.url,
  headers: input.token === undefined ? {} : { Authorization: `Bearer ${input.token}` },
  body: { tools: input.tools ?? [] },
  fetch: recordingFetch,
});
const chat = new Chat({
  id: input.chatId,
  transport,
  sendAutomaticallyWhen: (options) =>
    lastAssistantMessageIsCompleteWithToolCalls(options) || lastAssistantMessageIsCompleteWithApprovalResponses(options),
  onToolCall: ({ toolCall }) => {
    const output = input.outputs?.[toolCall.toolName];
    if (output !== undefined) chat.addToolOutput({ tool: toolCall.toolName, toolCallId: toolCall.toolCallId, output });
  },
  onFinish: () => finished(),
  onError: (error) => errors.push(String(error.message ?? error)),
});

const waiting = () =>
  chat.lastMessage?.parts.find((part) => isToolUIPart(part) && part.state === "approval-requested");

if (input.flow === "chat") {
  await chat.sendMessage({ text: input.prompt });
  for (const answer of input.approvals ?? []) {
    const part = waiting();
    if (part === undefined) break;
    const done = nextFinish();
    await chat.addToolApprovalResponse({ id: part.approval.id, approved: answer.approved, reason: answer.reason });
    await done;
  }
} else if (input.flow === "reconnect") {
  onChunk = (chunk, record) => {
    if (record.method === "POST" && record.chunks.length === 1) chat.stop(); // the stream is dropped
    if (record.method === "GET" && chunk.type === "tool-input-available") writeFileSync(input.gate, "opened");
  };
  await chat.sendMessage({ text: input.prompt });
  await chat.resumeStream();
} else if (input.flow === "get") {
  const stream = await transport.reconnectToStream({ chatId: input.chatId }).catch((error) => {
    errors.push(String(error.message ?? error));
    return null;
  });
  if (stream !== null) for await (const _ of stream);
}

process.stdout.write(JSON.stringify({ requests, messages: chat.messages, errors }));
