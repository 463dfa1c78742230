// A TypeScript SDK MCP server over stdio for `go run ./bench proxy`:
// echo returns its message; blob returns a text result of `bytes` bytes.
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

const server = new McpServer({ name: "bench-node", version: "1.0.0" });
server.registerTool("echo", { inputSchema: { message: z.string() } }, async ({ message }) => ({
  content: [{ type: "text", text: message }],
}));
server.registerTool("blob", { inputSchema: { bytes: z.number() } }, async ({ bytes }) => ({
  content: [{ type: "text", text: "x".repeat(bytes) }],
}));
await server.connect(new StdioServerTransport());
