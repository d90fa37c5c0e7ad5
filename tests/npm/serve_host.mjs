// A host on the TypeScript SDK's client, for tests/test_serve_hosts.py: starts the
// command after "--" as a stdio MCP server, lists its tools, makes the calls read as
// JSON from stdin ([{"name": ..., "arguments": {...}}, ...]) and prints one JSON object:
// {"server": serverInfo, "instructions": ..., "tools": [...], "results": [...]}.
// The SDK validates each structuredContent against the tool's outputSchema itself.
//
// Given an object instead ({"calls": [...], "elicit": {"decline_if": TEXT}}), the host
// declares the elicitation capability and answers each elicitation/create: accept with
// {"approve": true}, or decline when the message holds TEXT; it asks for progress on
// every call. The report adds "elicitations" (each request's params) and "progress"
// (each notification's message).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const TIMEOUT_MS = 180000;

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString("utf8"));
}

async function main() {
  const at = process.argv.indexOf("--");
  const [command, ...args] = process.argv.slice(at + 1);
  const given = await readStdin();
  const calls = Array.isArray(given) ? given : given.calls;
  const elicit = Array.isArray(given) ? null : given.elicit;
  const transport = new StdioClientTransport({ command, args, env: process.env, stderr: "inherit" });
  const options = elicit ? { capabilities: { elicitation: {} } } : undefined;
  const client = new Client({ name: "serve-test-host", version: "1.0.0" }, options);
  const elicitations = [];
  const progress = [];
  if (elicit) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      elicitations.push(request.params);
      if (elicit.decline_if && request.params.message.includes(elicit.decline_if)) {
        return { action: "decline" };
      }
      return { action: "accept", content: { approve: true } };
    });
  }
  await client.connect(transport, { timeout: TIMEOUT_MS });
  const listed = await client.listTools({}, { timeout: TIMEOUT_MS });
  const results = [];
  for (const call of calls) {
    const callOptions = { timeout: TIMEOUT_MS };
    if (elicit) {
      callOptions.onprogress = (note) => progress.push(note.message);
      callOptions.resetTimeoutOnProgress = true;
    }
    results.push(await client.callTool(call, undefined, callOptions));
  }
  const report = {
    server: client.getServerVersion(),
    instructions: client.getInstructions(),
    tools: listed.tools,
    results,
  };
  if (elicit) {
    report.elicitations = elicitations;
    report.progress = progress;
  }
  await client.close();
  process.stdout.write(JSON.stringify(report) + "\n");
}

main().catch((error) => {
  process.stderr.write("serve_host: " + (error && error.stack ? error.stack : error) + "\n");
  process.exit(1);
});
