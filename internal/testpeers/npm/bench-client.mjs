// A TypeScript SDK MCP client for `go run ./bench proxy`: it spawns the
// command after its first two arguments as a stdio MCP server, makes
// `calls` echo calls from `callers` concurrent callers after a warm-up,
// and prints each call's round trip in nanoseconds as a JSON array.
//
// Around the timed calls it lets the bench read what the spawned process
// costs: it prints {"pid":N}, the spawned process's id, and waits for a
// line on stdin before it times the calls; after printing the array it
// waits for another line before it closes.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { createInterface } from "node:readline";

const [calls, callers, command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args, stderr: "inherit" });
const client = new Client({ name: "bench", version: "1" });
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const go = async () => {
  if ((await lines.next()).done) process.exit(1); // the bench went away
};
await client.connect(transport);
const call = async () => {
  const t0 = process.hrtime.bigint();
  await client.callTool({ name: "echo", arguments: { message: "ping" } });
  return Number(process.hrtime.bigint() - t0);
};
for (let i = 0; i < 200; i++) await call();
process.stdout.write(JSON.stringify({ pid: transport.pid }) + "\n");
await go();
const per = Math.floor(Number(calls) / Number(callers));
const out = [];
await Promise.all(Array.from({ length: Number(callers) }, async () => {
  for (let i = 0; i < per; i++) out.push(await call());
}));
process.stdout.write(JSON.stringify(out) + "\n");
await go();
await client.close();
process.exit(0);
