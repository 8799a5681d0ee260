// One useChat request with the real AI SDK: `ai`'s DefaultChatTransport (which validates each part
// against the SDK's UI message chunk schema) and readUIMessageStream (which builds the assistant
// message as useChat does, and fails on a part out of order, e.g. an output for an unknown call).
// Input (stdin, JSON): {url, token, chatId, messages, tools}. The last assistant message, when it
// is the last message, is continued, as useChat continues it after addToolOutput.
// Output (stdout, JSON): {chunks, messages, sentComplete, complete} or {error, status, payload, chunks};
// sentComplete and complete: lastAssistantMessageIsCompleteWithToolCalls (useChat's usual
// sendAutomaticallyWhen) of the messages sent and of the messages after the reply.
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithToolCalls, readUIMessageStream } from "ai";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const input = JSON.parse(Buffer.concat(chunks).toString("utf8"));

const transport = new DefaultChatTransport({
  api: input.url,
  headers: input.token === undefined ? {} : { Authorization: `Bearer ${input.token}` },
  body: { tools: input.tools ?? [] },
});
const messages = input.messages ?? [];
const last = messages.at(-1);
const seen = [];
try {
  const stream = await transport.sendMessages({
    chatId: input.chatId,
    messages,
    trigger: "submit-message",
    messageId: undefined,
    abortSignal: undefined,
  });
  const recorded = stream.pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        seen.push(chunk);
        controller.enqueue(chunk);
      },
    }),
  );
  let message;
  for await (const built of readUIMessageStream({
    message: last?.role === "assistant" ? structuredClone(last) : undefined,
    stream: recorded,
    terminateOnError: true,
  })) {
    message = built;
  }
  const out = last?.role === "assistant" ? [...messages.slice(0, -1), message] : [...messages, message];
  const sentComplete = lastAssistantMessageIsCompleteWithToolCalls({ messages });
  const complete = lastAssistantMessageIsCompleteWithToolCalls({ messages: out });
  process.stdout.write(JSON.stringify({ chunks: seen, messages: out, sentComplete, complete }));
} catch (error) {
  let payload = null;
  try {
    payload = JSON.parse(error.responseBody ?? "null");
  } catch {}
  process.stdout.write(
    JSON.stringify({ chunks: seen, error: String(error.message ?? error), status: error.statusCode ?? null, payload }),
  );
}
