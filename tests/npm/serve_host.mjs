// A host on the TypeScript SDK's client, for tests/test_serve_hosts.py: starts the
// command after "--" as a stdio MCP server, lists its tools, makes the calls read as
// JSON from stdin ([{"name": ..., "arguments": {...}}, ...]) and prints one JSON object:
// {"server": serverInfo, "instructions": ..., "tools": [...], "results": [...]}.
// The SDK validates each structuredContent against the tool's outputSchema itself.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const TIMEOUT_MS = 180000;

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

async function main() {
  const at = process.argv.indexOf("--");
  const [command, ...args] = process.argv.slice(at + 1);
  const calls = await readStdin();
  const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
  const client = new Client({ name: "serve-test-host", version: "1.0.0" });
  await client.connect(transport, { timeout: TIMEOUT_MS });
  const listed = await client.listTools({}, { timeout: TIMEOUT_MS });
  const results = [];
  for (const call of calls) {
    results.push(await client.callTool(call, undefined, { timeout: TIMEOUT_MS }));
  }
  const report = {
    server: client.getServerVersion(),
    instructions: client.getInstructions(),
    tools: listed.tools,
    results,
  };
  await client.close();
  process.stdout.write(JSON.stringify(report) + "\n");
}

main().catch((error) => {
  process.stderr.write("serve_host: " + (error && error.stack ? error.stack : error) + "\n");
  process.exit(1);
});
