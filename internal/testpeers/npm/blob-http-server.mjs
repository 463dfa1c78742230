// A TypeScript SDK MCP server over streamable HTTP, answering over SSE
// (the SDK's default), for the large-event tests and `go run ./bench sse`:
//   - blob returns a text result of `bytes` UTF-8 bytes (ASCII, characters
//     JSON escapes, and 2-, 3- and 4-byte runes);
//   - digest returns the SHA-256 (hex) and the byte length of the UTF-8
//     of its `data` argument, so a caller checks what the server received.
// It takes request bodies up to 256 MiB, listens on 127.0.0.1 on a port
// the system picks, and prints "listening on URL".
import { createServer } from "node:http";
import { createHash, randomUUID } from "node:crypto";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

const maxRequestBodySize = 256 << 20;
const unit = Buffer.from('aep "sse" \\ é✓😀\n\t', "utf8");

function blob(bytes) {
  const out = Buffer.alloc(bytes, "x");
  for (let i = 0; i + unit.length <= bytes; i += unit.length) {
    unit.copy(out, i);
  }
  return out.toString("utf8");
}

function newServer() {
  const server = new McpServer({ name: "blob-http", version: "1.0.0" });
  server.registerTool("blob", { inputSchema: { bytes: z.number().int().nonnegative() } }, async ({ bytes }) => ({
    content: [{ type: "text", text: blob(bytes) }],
  }));
  server.registerTool("digest", { inputSchema: { data: z.string() } }, async ({ data }) => {
    const b = Buffer.from(data, "utf8");
    return { content: [{ type: "text", text: `${createHash("sha256").update(b).digest("hex")} ${b.length}` }] };
  });
  return server;
}

const sessions = new Map();

const http = createServer(async (req, res) => {
  if (new URL(req.url, "http://localhost").pathname !== "/mcp") {
    res.writeHead(404).end();
    return;
  }
  const sid = req.headers["mcp-session-id"];
  let transport = sid ? sessions.get(sid) : undefined;
  if (sid && !transport) {
    res.writeHead(404).end();
    return;
  }
  if (!transport) {
    transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: randomUUID,
      maxRequestBodySize,
      onsessioninitialized: (id) => sessions.set(id, transport),
    });
    transport.onclose = () => sessions.delete(transport.sessionId);
    await newServer().connect(transport);
  }
  await transport.handleRequest(req, res);
});
http.listen(0, "127.0.0.1", () => {
  console.log(`listening on http://127.0.0.1:${http.address().port}/mcp`);
});
