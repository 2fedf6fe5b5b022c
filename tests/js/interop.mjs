// One client of the interop matrix: the official TypeScript MCP SDK over Streamable HTTP or the
// legacy HTTP+SSE transport. Lists tools, calls one tool of each upstream, follows a call's
// progress, and gets an error result; prints one JSON summary line.
// Usage: node tests/js/interop.mjs http|sse URL '{"upstream": ["tool", {arguments}], ...}'
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { collectLateProgress } from "./late_progress.mjs";

const [mode, url, plan] = process.argv.slice(2);
if (!["http", "sse"].includes(mode) || !url || !plan) {
  console.error("usage: node interop.mjs http|sse URL PLAN_JSON");
  process.exit(2);
}

const textOf = (result) =>
  (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");

async function main() {
  const client = new Client({ name: "toolbridge-interop", version: "0.0.1" }, { capabilities: {} });
  const lateProgress = collectLateProgress(client);
  const transport =
    mode === "http" ? new StreamableHTTPClientTransport(new URL(url)) : new SSEClientTransport(new URL(url));
  await client.connect(transport);
  const tools = (await client.listTools()).tools.map((t) => t.name);
  const call = async (name, args) => {
    const r = await client.callTool({ name, arguments: args });
    return { isError: r.isError ?? false, text: textOf(r) };
  };
  const calls = {};
  for (const [upstream, [tool, args]] of Object.entries(JSON.parse(plan))) {
    calls[upstream] = await call(tool, args);
  }
  const progress = [];
  await client.callTool({ name: "fixture__progress", arguments: { steps: 3, delay_ms: 5 } }, undefined, {
    onprogress: (p) => progress.push(p.progress),
  });
  const error = await call("fixture__fail", { message: "interop failure" });
  await client.close();
  console.log(JSON.stringify({ tools, calls, progress, late_progress: lateProgress, error }));
}

main().catch((e) => {
  console.error(e?.stack ?? String(e));
  process.exit(1);
});
