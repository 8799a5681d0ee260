// A useChat page for a toolwire agent (`toolwire serve --ai-sdk`), with one front-end tool.
//
// `pick_color` runs here, in the page: toolwire is the server, so the page declares the tool in
// each request's body; the model's call shows its options as buttons, the person's click is the
// call's output (`addToolOutput`), and `sendAutomaticallyWhen` sends it back to the server. A call
// the server's policy asks about is the SDK's tool approval: Allow / Deny answer it
// (`addToolApprovalResponse`), and `sendAutomaticallyWhen` sends the answer.
import { useChat } from "@ai-sdk/react";
import {
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
} from "ai";
import { useState } from "react";
import { createRoot } from "react-dom/client";

const PICK_COLOR = {
  name: "pick_color",
  description: "Ask the user to pick one color from a few options; returns the color they picked.",
  inputSchema: {
    type: "object",
    properties: { options: { type: "array", items: { type: "string" }, description: "The colors to offer" } },
    required: ["options"],
  },
};

const STATES = {
  "output-available": "answered",
  "output-error": "failed",
  "output-denied": "denied",
  "approval-requested": "asking",
  "approval-responded": "decided",
};

// The server and token: from the query string (?server=...&token=...), else typed in.
function App() {
  const query = new URLSearchParams(location.search);
  const [server, setServer] = useState(query.get("server") ?? "http://127.0.0.1:8765");
  const [token, setToken] = useState(query.get("token") ?? "");
  const [connected, setConnected] = useState(query.has("server") && query.has("token"));
  const connect = (event) => {
    event.preventDefault();
    setConnected(true);
  };
  return (
    <>
      <form id="settings" onSubmit={connect}>
        <fieldset disabled={connected}>
          <legend>toolwire server</legend>
          <input aria-label="Server URL" value={server} onChange={(event) => setServer(event.target.value)} />
          <input
            aria-label="Token"
            type="password"
            autoComplete="off"
            value={token}
            onChange={(event) => setToken(event.target.value)}
          />
          <button type="submit">Connect</button>
        </fieldset>
      </form>
      {connected ? <Conversation server={server.replace(/\/+$/, "")} token={token} /> : null}
    </>
  );
}

function Conversation({ server, token }) {
  const [transport] = useState(
    () =>
      new DefaultChatTransport({
        api: `${server}/ai-sdk/chat`,
        headers: { Authorization: `Bearer ${token}` },
        body: { tools: [PICK_COLOR] }, // toolwire's own field: the front end's tools
      }),
  );
  const { messages, sendMessage, addToolOutput, addToolApprovalResponse, status, error } = useChat({
    transport,
    // Once every tool call of the last answer has its output, or every question its answer, send
    // them: the run goes on.
    sendAutomaticallyWhen: (options) =>
      lastAssistantMessageIsCompleteWithToolCalls(options) || lastAssistantMessageIsCompleteWithApprovalResponses(options),
  });
  const [prompt, setPrompt] = useState("");
  const busy = status === "submitted" || status === "streaming";
  // A new prompt while the page owes an output or an answer is refused (409): answer first.
  const waiting = messages
    .at(-1)
    ?.parts.some((part) => part.state === "input-available" || part.state === "approval-requested");

  const send = (event) => {
    event.preventDefault();
    if (!prompt.trim() || busy || waiting) return;
    sendMessage({ text: prompt.trim() });
    setPrompt("");
  };
  const pick = (toolCallId, color) => addToolOutput({ tool: PICK_COLOR.name, toolCallId, output: color });
  const decide = (approvalId, approved) => addToolApprovalResponse({ id: approvalId, approved });

  return (
    <>
      <div id="messages" aria-live="polite">
        {messages.map((message) => (
          <div key={message.id} className={`message ${message.role}`}>
            {message.parts.map((part, index) => (
              <Part key={index} part={part} busy={busy} pick={pick} decide={decide} />
            ))}
          </div>
        ))}
      </div>
      <p id="error" role="alert">
        {error ? `The request failed: ${error.message}` : ""}
      </p>
      <form id="chat" onSubmit={send}>
        <input
          aria-label="Message"
          placeholder="Ask for a color…"
          autoComplete="off"
          value={prompt}
          onChange={(event) => setPrompt(event.target.value)}
        />
        <button type="submit" disabled={busy || waiting}>
          Send
        </button>
      </form>
    </>
  );
}

function Part({ part, busy, pick, decide }) {
  if (part.type === "text") return part.text;
  if (!part.type.startsWith("tool-")) return null;
  const name = part.type.slice("tool-".length);
  const mode = part.toolMetadata?.toolwire?.mode; // the call's ToolMode, as the server decided it
  return (
    <div className="tool-call" data-tool={name} data-state={STATES[part.state] ?? "waiting"}>
      <strong>{name}</strong> {mode ? <span className="mode">{mode}</span> : null}
      {part.state === "output-available" ? <div>→ {text(part.output)}</div> : null}
      {part.state === "output-error" ? <div>→ {part.errorText}</div> : null}
      {part.state === "output-denied" ? <div>→ denied</div> : null}
      {part.state === "approval-requested" && !busy ? (
        <div className="question">
          {part.approval.requestReason ?? "May this call run?"}{" "}
          <button type="button" onClick={() => decide(part.approval.id, true)}>
            Allow
          </button>
          <button type="button" onClick={() => decide(part.approval.id, false)}>
            Deny
          </button>
        </div>
      ) : null}
      {part.state === "input-available" && name === PICK_COLOR.name && !busy
        ? colors(part.input).map((color) => (
            <button key={color} type="button" onClick={() => pick(part.toolCallId, color)}>
              {color}
            </button>
          ))
        : null}
    </div>
  );
}

// The colors the model offered (a small model may offer none: then three).
function colors(input) {
  const options = input?.options;
  return Array.isArray(options) && options.length ? options.map(String) : ["red", "green", "blue"];
}

function text(output) {
  return typeof output === "string" ? output : JSON.stringify(output);
}

createRoot(document.querySelector("#root")).render(<App />);
