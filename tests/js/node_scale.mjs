// One node's rollout with the official TypeScript MCP SDK: SESSIONS sessions opened at once, each
// making CALLS concurrent tools/call of mixed length (instant echo, 50 ms, 1 s), then closed.
// Prints a JSON summary: calls answered with the expected text, and the first failures.
// Usage: node tests/js/node_scale.mjs URL SESSIONS CALLS
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, sessionsArg, callsArg] = process.argv.slice(2);
if (!url) {
  console.error("usage: node node_scale.mjs URL SESSIONS CALLS");
  process.exit(2);
}
const sessions = Number(sessionsArg ?? 100);
const calls = Number(callsArg ?? 3);

const textOf = (result) =>
  (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");

// The call's tool, arguments and the text it must answer with.
function plan(session, i) {
  switch ((session + i) % 3) {
    case 0:
      return ["fixture__echo", { text: `s${session}-c${i}` }, `s${session}-c${i}`];
    case 1:
      return ["fixture__sleep", { ms: 50 }, "slept 50 ms"];
    default:
      return ["fixture__sleep", { ms: 1000 }, "slept 1000 ms"];
  }
}

const summary = { sessions, calls: sessions * calls, answered: 0, failed: 0, errors: [] };
const fail = (what) => {
  summary.failed += 1;
  if (summary.errors.length < 10) summary.errors.push(String(what).slice(0, 300));
};

async function trajectory(session) {
  const client = new Client({ name: "toolbridge-node-scale", version: "0.0.1" }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  try {
    await client.connect(transport);
  } catch (e) {
    for (let i = 0; i < calls; i++) fail(`session ${session} connect: ${e?.cause ?? e}`);
    return;
  }
  await Promise.all(
    Array.from({ length: calls }, async (_, i) => {
      const [name, args, expected] = plan(session, i);
      try {
        const result = await client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
        const text = textOf(result);
        if (result.isError || text !== expected) fail(`session ${session} call ${i}: ${text}`);
        else summary.answered += 1;
      } catch (e) {
        fail(`session ${session} call ${i}: ${e?.message ?? e} ${e?.cause ?? ""}`);
      }
    }),
  );
  try {
    await transport.terminateSession();
    await client.close();
  } catch (e) {
    fail(`session ${session} close: ${e?.message ?? e}`);
  }
}

await Promise.all(Array.from({ length: sessions }, (_, s) => trajectory(s)));
console.log(JSON.stringify(summary));
