// gateway-client drives an MCP server over HTTP with the TypeScript SDK's
// own client transports, for the gateway's tests. It prints one JSON line
// per step on stdout, so the Go test reads what the client saw.
//
// Usage: node gateway-client.mjs '<json config>'
//   url        the MCP endpoint (…/mcp) or the HTTP+SSE URL (…/sse)
//   transport  "streamable" (StreamableHTTPClientTransport) or "sse"
//              (SSEClientTransport)
//   token      the bearer token, if any
//   name       the client's name in initialize
//   elicit     if set, the client declares elicitation and answers every
//              elicitation/create with this ElicitResult
//   calls      [{tool, args}] called in order; each result is printed
//   terminate  end the session with DELETE before closing (streamable)
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const cfg = JSON.parse(process.argv[2]);
const out = (o) => process.stdout.write(JSON.stringify(o) + '\n');

const headers = cfg.token ? { Authorization: `Bearer ${cfg.token}` } : {};
const url = new URL(cfg.url);
const transport = cfg.transport === 'sse'
  ? new SSEClientTransport(url, { requestInit: { headers } })
  : new StreamableHTTPClientTransport(url, { requestInit: { headers } });

const capabilities = cfg.elicit ? { elicitation: { form: {} } } : {};
const client = new Client({ name: cfg.name, version: '1.0.0' }, { capabilities });
if (cfg.elicit) {
  client.setRequestHandler(ElicitRequestSchema, async (req) => {
    out({ event: 'elicited', message: req.params.message });
    return cfg.elicit;
  });
}

try {
  await client.connect(transport);
  out({ event: 'connected', sessionId: transport.sessionId ?? null, protocol: transport.protocolVersion ?? null });
  for (const call of cfg.calls ?? []) {
    const res = await client.callTool({ name: call.tool, arguments: call.args ?? {} }, undefined, { timeout: 120000 });
    const text = (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');
    out({ event: 'result', tool: call.tool, text, isError: res.isError ?? false });
  }
  if (cfg.terminate && transport.terminateSession) {
    await transport.terminateSession();
    out({ event: 'terminated' });
  }
  await client.close();
  out({ event: 'closed' });
} catch (err) {
  out({ event: 'error', message: String(err?.message ?? err), code: err?.code ?? null });
  process.exitCode = 1;
  await client.close().catch(() => {});
}
