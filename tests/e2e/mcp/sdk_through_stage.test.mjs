// The MCP stage with the official MCP TypeScript SDK on both sides (a real Client over its
// Streamable HTTP transport, a real McpServer), the stage between them as the gate's pipeline
// places it (stage_relay.mjs), over JSON answers and over SSE answers:
//   - allowed tools work; tools/list shows only what may be called;
//   - a refused tool's error reaches the SDK client, naming the rule and its message, and the
//     server never sees the call;
//   - after notifications/tools/list_changed the list the client fetches again is filtered too;
//   - under --unknown=ask a tool no line decides is asked about, and the answer decides;
//   - a batch mixing allowed and refused calls is split, and its answers come back merged.
// Run by CTest as mcp_sdk_test: node --test sdk_through_stage.test.mjs, with MCP_STAGE_PIPE set.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test, before, after } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startServer } from './sdk_server.mjs';
import { StagePipe, gatedFetch } from './stage_relay.mjs';

const pipePath = process.env.MCP_STAGE_PIPE;
assert.ok(pipePath, 'MCP_STAGE_PIPE names the mcp_stage_pipe executable');

const rulesFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'mcp-rules-')), 'requests.txt');
fs.writeFileSync(
  rulesFile,
  'allow mcp.example.com mcp-tool search\n' +
    'allow mcp.example.com mcp-tool read_*\n' +
    'deny  mcp.example.com mcp-tool delete_*   #! agents never delete\n',
);

async function connect(server, mode, options = {}) {
  const pipe = new StagePipe(pipePath, rulesFile, 'mcp.example.com', mode);
  const judgements = [];
  const fetch = gatedFetch(pipe, { log: (j) => judgements.push(j), ...options });
  const client = new Client({ name: 'sandgate-test-client', version: '1.0.0' }, options.clientOptions);
  await client.connect(new StreamableHTTPClientTransport(server.url, { fetch }));
  return { client, pipe, judgements, fetch };
}

for (const json of [true, false]) {
  describe(`through the stage, ${json ? 'JSON' : 'SSE'} answers`, () => {
    let server;
    before(async () => {
      server = await startServer({ json });
    });
    after(async () => {
      await server.close();
    });

    test('allowed tools work, refused ones never reach the server, lists are filtered', async () => {
      const { client, pipe, judgements } = await connect(server, 'deny');
      try {
        const listed = (await client.listTools()).tools.map((t) => t.name).sort();
        assert.deepEqual(listed, ['read_file', 'search']);

        const found = await client.callTool({ name: 'search', arguments: { q: 'x' } });
        assert.equal(found.isError, undefined);
        assert.equal(found.content[0].text, 'search ran with x');

        const refused = await client.callTool({ name: 'delete_repo', arguments: { q: 'secret-argument-7' } });
        assert.equal(refused.isError, true);
        assert.match(refused.content[0].text, /denied by the request rule 'deny  mcp\.example\.com mcp-tool delete_\*'/);
        assert.match(refused.content[0].text, /agents never delete/);
        const unlisted = await client.callTool({ name: 'push_files', arguments: {} });
        assert.equal(unlisted.isError, true);
        assert.match(unlisted.content[0].text, /tool push_files on mcp\.example\.com is not allowed/);

        assert.deepEqual(server.ran, ['search']);
        assert.ok(server.bodies.every((b) => !b.includes('delete_repo') && !b.includes('push_files')));
        // The log names the tool, never its arguments.
        const logged = judgements.flatMap((j) => j.calls.map((c) => `${c.logged} ${c.outcome}`));
        assert.ok(logged.includes('tool delete_repo refused'));
        assert.ok(!JSON.stringify(judgements.map((j) => j.calls)).includes('secret-argument-7'));
      } finally {
        await client.close();
        pipe.close();
        server.ran.length = 0;
      }
    });

    test('after notifications/tools/list_changed the list fetched again is filtered', async () => {
      let resolveChanged;
      const changed = new Promise((resolve) => {
        resolveChanged = resolve;
      });
      const { client, pipe } = await connect(server, 'deny', {
        clientOptions: {
          listChanged: { tools: { debounceMs: 0, onChanged: (error, tools) => resolveChanged({ error, tools }) } },
        },
      });
      try {
        await client.listTools();
        // Give the client's GET stream (where the notification comes) time to open.
        await new Promise((resolve) => setTimeout(resolve, 300));
        server.addTool('read_notes');
        server.addTool('delete_branch');
        const { error, tools } = await changed;
        assert.equal(error, null);
        const names = tools.map((t) => t.name).sort();
        assert.ok(names.includes('read_notes'), names.join(','));
        assert.ok(!names.includes('delete_branch'), names.join(','));
        assert.deepEqual(names.filter((n) => !['read_notes'].includes(n)), ['read_file', 'search']);
      } finally {
        await client.close();
        pipe.close();
      }
    });

    test('under ask, a tool no line decides is asked about and the answer decides', async () => {
      const asked = [];
      let allow = true;
      const { client, pipe } = await connect(server, 'ask', {
        onQuestion: (question) => {
          asked.push(question);
          return allow;
        },
      });
      try {
        // Shown in the list (a call would ask); the denied ones are not.
        const listed = (await client.listTools()).tools.map((t) => t.name).sort();
        assert.deepEqual(listed, ['create_issue', 'list_issues', 'push_files', 'read_file', 'search']);
        const yes = await client.callTool({ name: 'create_issue', arguments: { q: 'bug' } });
        assert.equal(yes.content[0].text, 'create_issue ran with bug');
        assert.equal(asked.length, 1);
        assert.equal(asked[0].text, 'allow tool create_issue on mcp.example.com?');
        assert.equal(asked[0].allow_line, 'allow mcp.example.com mcp-tool create_issue');
        allow = false;
        const no = await client.callTool({ name: 'push_files', arguments: {} });
        assert.equal(no.isError, true);
        assert.match(no.content[0].text, /a person answered deny/);
        // A denied tool is never asked about.
        await client.callTool({ name: 'delete_repo', arguments: {} });
        assert.equal(asked.length, 2);
        assert.ok(server.ran.includes('create_issue') && !server.ran.includes('push_files'));
      } finally {
        await client.close();
        pipe.close();
        server.ran.length = 0;
      }
    });

    test('a batch is split: allowed calls go on, refused ones are answered, in order', async () => {
      const { client, pipe, fetch } = await connect(server, 'deny');
      try {
        // The session the SDK client set up, then a batch of the client's own making.
        const sessionId = client.transport.sessionId;
        const call = (id, name) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: { q: `${id}` } } });
        const response = await fetch(server.url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            'mcp-session-id': sessionId,
            'mcp-protocol-version': client.transport.protocolVersion ?? '2025-06-18',
          },
          body: JSON.stringify([call(11, 'search'), call(12, 'delete_repo'), call(13, 'read_file')]),
        });
        assert.equal(response.status, 200);
        let messages;
        if ((response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
          const text = await response.text();
          messages = text
            .split('\n')
            .filter((l) => l.startsWith('data: ') && l.length > 6)
            .map((l) => JSON.parse(l.slice(6)));
          messages.sort((a, b) => a.id - b.id);
        } else {
          messages = await response.json();
        }
        assert.deepEqual(messages.map((m) => m.id), [11, 12, 13]);
        assert.equal(messages[0].result.content[0].text, 'search ran with 11');
        assert.equal(messages[1].result.isError, true);
        assert.equal(messages[2].result.content[0].text, 'read_file ran with 13');
        assert.deepEqual(server.ran, ['search', 'read_file']);
        const batch = server.bodies.at(-1);
        assert.ok(!batch.includes('delete_repo'), batch);
      } finally {
        await client.close();
        pipe.close();
        server.ran.length = 0;
      }
    });
  });
}
