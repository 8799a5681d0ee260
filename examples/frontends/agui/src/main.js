// A chat with a toolwire agent over AG-UI (`toolwire serve --agui`), with one front-end tool.
//
// `pick_color` runs here, in the page: the model's call shows its options as buttons, the person's
// click is the call's result (a `tool` message), and the next run sends it to the server. A call
// the server's policy asks about ends the run with an interrupt: Allow / Deny buttons answer it,
// in the next run's `resume`.
import { HttpAgent } from "@ag-ui/client";

const PICK_COLOR = {
  name: "pick_color",
  description: "Ask the user to pick one color from a few options; returns the color they picked.",
  parameters: {
    type: "object",
    properties: { options: { type: "array", items: { type: "string" }, description: "The colors to offer" } },
    required: ["options"],
  },
};

const settings = document.querySelector("#settings");
const chat = document.querySelector("#chat");
const list = document.querySelector("#messages");
const error = document.querySelector("#error");

const query = new URLSearchParams(location.search);
settings.elements.server.value = query.get("server") ?? "http://127.0.0.1:8765";
settings.elements.token.value = query.get("token") ?? "";

let agent = null; // made on the first message, from the settings (then fixed for the conversation)
let running = false;

function connect() {
  if (agent === null) {
    const server = settings.elements.server.value.replace(/\/+$/, "");
    agent = new HttpAgent({
      url: `${server}/agui`,
      headers: { Authorization: `Bearer ${settings.elements.token.value}` },
    });
    agent.subscribe({ onMessagesChanged: render });
    settings.querySelector("fieldset").disabled = true;
  }
  return agent;
}

// One run: send the conversation (the server takes what is new) and the page's tools, and watch
// the messages grow as the events stream in.
async function run(resume) {
  running = true;
  error.textContent = "";
  render();
  try {
    await agent.runAgent({ tools: [PICK_COLOR], ...(resume ? { resume } : {}) });
  } catch (failure) {
    error.textContent = `The run failed: ${failure.message ?? failure}`;
  } finally {
    running = false;
    render();
  }
}

chat.addEventListener("submit", (event) => {
  event.preventDefault();
  const prompt = chat.elements.prompt.value.trim();
  if (!prompt || running) return;
  chat.elements.prompt.value = "";
  connect().addMessage({ id: crypto.randomUUID(), role: "user", content: prompt });
  run();
});

function answer(toolCallId, color) {
  agent.addMessage({ id: crypto.randomUUID(), role: "tool", toolCallId, content: color });
  run();
}

// Answer the server's question about a call (an interrupt), with every other open one left as is:
// a resume answers all the open interrupts, so the others are answered "no".
function decide(interrupt, approved) {
  const resume = agent.pendingInterrupts.map((open) => ({
    interruptId: open.id,
    status: "resolved",
    payload: { approved: open.id === interrupt.id ? approved : false },
  }));
  run(resume);
}

function render() {
  const messages = agent?.messages ?? [];
  const results = new Map(messages.filter((m) => m.role === "tool").map((m) => [m.toolCallId, m.content]));
  const waiting = messages.some((m) => (m.toolCalls ?? []).some((call) => !results.has(call.id)));
  list.replaceChildren(...messages.filter((m) => m.role !== "tool").map((m) => show(m, results)));
  // A new prompt while the front end owes a result or an answer is refused (409): answer first.
  chat.querySelector("button").disabled = running || waiting;
}

function show(message, results) {
  const box = element("div", `message ${message.role}`, message.content ?? "");
  for (const call of message.toolCalls ?? []) box.append(showCall(call, results.get(call.id)));
  return box;
}

function showCall(call, result) {
  const box = element("div", "tool-call");
  box.dataset.tool = call.function.name;
  const mode = call.metadata?.toolwire?.mode; // the call's ToolMode, as the server decided it
  box.append(element("strong", "", call.function.name));
  if (mode) box.append(" ", element("span", "mode", mode));
  const question = running ? undefined : agent.pendingInterrupts.find((open) => open.toolCallId === call.id);
  if (result !== undefined) {
    box.dataset.state = "answered";
    box.append(element("div", "", `→ ${result}`));
  } else if (question !== undefined) {
    box.dataset.state = "asking";
    box.append(element("div", "question", question.message ?? "May this call run?"));
    for (const [label, approved] of [["Allow", true], ["Deny", false]]) {
      const button = element("button", "", label);
      button.addEventListener("click", () => decide(question, approved));
      box.append(button);
    }
  } else if (call.function.name === PICK_COLOR.name && !running) {
    box.dataset.state = "waiting";
    for (const color of colors(call.function.arguments)) {
      const button = element("button", "", color);
      button.addEventListener("click", () => answer(call.id, color));
      box.append(button);
    }
  }
  return box;
}

// The colors the model offered (a small model may offer none: then three).
function colors(json) {
  let options;
  try {
    options = JSON.parse(json).options;
  } catch {
    options = undefined; // not JSON
  }
  return Array.isArray(options) && options.length ? options.map(String) : ["red", "green", "blue"];
}

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}
