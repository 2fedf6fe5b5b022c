// The TypeScript SDK v2 (@modelcontextprotocol/client) as a client of the interop matrix, in
// either era: `auto` probes server/discover and speaks 2026-07-28 to a gateway that answers it;
// `legacy` keeps the initialize handshake. Lists tools, calls one tool of each upstream, follows
// a call's progress, gets an error result; prints one JSON summary line with the negotiated
// protocol version.
// Usage: node tests/js/interop_v2.mjs auto|legacy URL '{"upstream": ["tool", {arguments}], ...}'
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { collectLateProgress } from "./late_progress.mjs";

const [mode, url, plan] = process.argv.slice(2);
if (!["auto", "legacy"].includes(mode) || !url || !plan) {
  console.error("usage: node interop_v2.mjs auto|legacy URL PLAN_JSON");
  process.exit(2);
}

const textOf = (result) =>
  (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");

async function main() {
  const client = new Client(
    { name: "toolbridge-interop-v2", version: "0.0.1" },
    { capabilities: {}, versionNegotiation: { mode } },
  );
  const lateProgress = collectLateProgress(client);
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const version = client.getNegotiatedProtocolVersion();
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
  await client.callTool({ name: "fixture__progress", arguments: { steps: 3, delay_ms: 5 } }, {
    onprogress: (p) => progress.push(p.progress),
  });
  const error = await call("fixture__fail", { message: "interop failure" });
  await client.close();
  console.log(JSON.stringify({ version, tools, calls, progress, late_progress: lateProgress, error }));
}

main().catch((e) => {
  console.error(e?.stack ?? String(e));
  process.exit(1);
});
