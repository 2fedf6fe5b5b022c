// Connects to a toolbridge gateway with the official TypeScript MCP SDK and prints a JSON summary.
// Usage: node tests/js/client.mjs http://127.0.0.1:PORT/mcp
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = process.argv[2];
if (!url) {
  console.error("usage: node client.mjs URL");
  process.exit(2);
}

const textOf = (result) =>
  (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("");

async function main() {
  const client = new Client({ name: "toolbridge-ts-it", version: "0.0.1" }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  const summary = {
    serverVersion: client.getServerVersion() ?? null,
    protocolVersion: transport.protocolVersion ?? null,
    sessionId: transport.sessionId ?? null,
  };
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : undefined);
    tools.push(...page.tools.map((t) => t.name));
    cursor = page.nextCursor;
  } while (cursor);
  summary.tools = tools;

  const echo = await client.callTool({ name: "fixture__echo", arguments: { text: "from typescript" } });
  summary.fixtureEcho = { isError: echo.isError ?? false, text: textOf(echo) };

  const everything = await client.callTool({ name: "everything__echo", arguments: { message: "ts to everything" } });
  summary.everythingEcho = { isError: everything.isError ?? false, text: textOf(everything) };

  const add = await client.callTool({ name: "fixture__add", arguments: { a: 20, b: 22 } });
  summary.fixtureAdd = { isError: add.isError ?? false, text: textOf(add) };

  // Parallel calls on one session: the gateway must keep ids straight.
  const parallel = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      client.callTool({ name: "fixture__echo", arguments: { text: `p${i}` } }).then(textOf)),
  );
  summary.parallel = parallel;

  await transport.terminateSession();
  await client.close();
  console.log(JSON.stringify(summary));
}

main().catch((err) => {
  console.error(err?.stack ?? String(err));
  process.exit(1);
});
