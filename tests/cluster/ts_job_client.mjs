// One TypeScript client (the bundle `toolwire serve` ships at /static/toolwire-client.js) running
// jobs of tests/cluster/cluster_app.py through haproxy, for tests/cluster/test_cluster_clients.py.
//
//   node --experimental-websocket ts_job_client.mjs BUNDLE URL TOKEN JOBS ROUNDS
//
// It prints one JSON object per line: {"conversation"} once connected; {"held": request id} when
// its first Work call has started, and then waits for a line on stdin before answering it (the
// test kills the replica meanwhile); {"answers", "executions"} at the end (Work executions per
// request id, which the client's ledger must keep at 1); and {"event"} for each connection event.

import { createInterface } from "node:readline";

const [bundle, url, token, jobs, rounds] = process.argv.slice(2);
const { connect } = await import(bundle);

const JOBS = {
  name: "Jobs",
  description: "The harness's client tools",
  tools: [
    {
      name: "Work",
      description: "Do one round of a job",
      parametersSchema: {
        type: "object",
        properties: { job: { type: "string" }, round: { type: "integer" } },
        required: ["job", "round"],
      },
    },
  ],
};

const started = Date.now();
const say = (value) => console.log(JSON.stringify({ ...value, ms: Date.now() - started }));
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const executions = {};
let held = false;

async function work(args, context) {
  const id = context.request.id;
  executions[id] = (executions[id] ?? 0) + 1;
  if (!held) {
    held = true;
    say({ held: id });
    await lines.next(); // the test goes on once the replica that sent it is gone
  }
  return `${args.job} round ${args.round} worked`;
}

const client = await connect(url, {
  token,
  groups: [JOBS],
  expandedContainers: ["Jobs"],
  handlers: { Work: work },
  reconnect: { initialDelayMs: 50, maxDelayMs: 1000 },
  // A reconnect that haproxy holds (sent, by the conversation's hash, to the replica just killed)
  // is given up sooner than the default 10 s: the harness's replicas wait for a client that left
  // only ≈ 3.6 s (cluster_app.DISCONNECTION) before its call fails.
  handshakeTimeoutMs: 2_000,
  onEvent: (event) => {
    if (process.env.TS_CLIENT_DEBUG || event.kind === "connection" || event.kind === "error") say({ event });
  },
});
say({ conversation: client.conversationId });
const answers = [];
for (let job = 0; job < Number(jobs); job++) {
  answers.push(await client.ask(`job ts-${job} rounds ${rounds}`));
}
say({ answers, executions });
client.close();
process.exit(0);
