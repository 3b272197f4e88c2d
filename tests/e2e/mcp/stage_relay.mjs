// The MCP stage between a real SDK client and a real SDK server: a `fetch` for the client's
// Streamable HTTP transport that does, at each call point, what the gate's HTTP exchange
// pipeline does with the stage (proxy/mcp/mcp_stage.hpp), the stage itself running in
// mcp_stage_pipe (tests/support/mcp_stage_pipe.cpp):
//   POST: the whole body read ahead and judged; `ask` -> the questions answered (the board's
//         part, played by `onQuestion`), judged again; `answer` -> the gate's answer, nothing
//         sent; `forward` -> the (smaller) body sent, the answer started through the filter:
//         pass as it is, hold a JSON answer whole, stream an event stream piece by piece,
//         replace a 202 (with the gate's answers, or nothing), or refuse (502) an answer in a
//         type the gate does not read;
//   GET:  the server's event stream through a stream filter;
//   else: as it is.
import { spawn } from 'node:child_process';
import readline from 'node:readline';

export class StagePipe {
  constructor(pipePath, rulesFile, host, mode) {
    this.child = spawn(pipePath, [rulesFile, host, mode], { stdio: ['pipe', 'pipe', 'inherit'] });
    this.waiting = [];
    readline.createInterface({ input: this.child.stdout }).on('line', (line) => {
      this.waiting.shift()(JSON.parse(line));
    });
  }
  call(request) {
    return new Promise((resolve) => {
      this.waiting.push(resolve);
      this.child.stdin.write(JSON.stringify(request) + '\n');
    });
  }
  close() {
    this.child.stdin.end();
  }
}

function streamThrough(pipe, exchange, body) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  return new ReadableStream({
    async pull(controller) {
      const { value, done } = await reader.read();
      if (done) {
        const end = await pipe.call({ op: 'end', exchange });
        if (end.bytes) {
          controller.enqueue(encoder.encode(end.bytes));
        }
        controller.close();
        return;
      }
      const out = await pipe.call({ op: 'sse', exchange, bytes: decoder.decode(value, { stream: true }) });
      if (out.error) {
        controller.error(new Error(out.error));  // the gate cuts the stream
        await reader.cancel();
        return;
      }
      if (out.bytes) {
        controller.enqueue(encoder.encode(out.bytes));
      }
    },
    cancel() {
      return reader.cancel();
    },
  });
}

function gateAnswer(answer) {
  const headers = answer.content_type ? { 'content-type': answer.content_type } : {};
  return new Response(answer.body === '' ? null : answer.body, { status: answer.status, headers });
}

// A fetch that puts the stage between the client and the server. `log` receives every
// judgement; `onQuestion(question)` answers a question (true: allow).
export function gatedFetch(pipe, { log = () => {}, onQuestion = () => false } = {}) {
  return async (url, init = {}) => {
    const method = (init.method ?? 'GET').toUpperCase();
    const headers = new Headers(init.headers);
    if (method === 'POST') {
      const body = typeof init.body === 'string' ? init.body : new TextDecoder().decode(init.body);
      const accept = headers.get('accept') ?? '';
      let judged = await pipe.call({ op: 'judge', body, accept });
      if (judged.action === 'ask') {
        log(judged);
        const answers = [];
        for (const question of judged.questions) {
          answers.push({ name: question.name, allowed: await onQuestion(question) });
        }
        judged = await pipe.call({ op: 'judge', body, accept, answers });
      }
      log(judged);
      if (judged.action === 'answer') {
        return gateAnswer(judged.answer);
      }
      const response = await fetch(url, { ...init, body: judged.body });
      const started = await pipe.call({
        op: 'response',
        exchange: judged.exchange,
        status: response.status,
        content_type: response.headers.get('content-type') ?? '',
      });
      if (started.mode === 'refuse') {
        await response.body?.cancel();
        return new Response(started.refusal, { status: 502 });
      }
      if (started.mode === 'replace') {
        await response.body?.cancel();
        return gateAnswer(started.answer);
      }
      if (started.mode === 'json') {
        const filtered = await pipe.call({ op: 'json', exchange: judged.exchange, body: await response.text() });
        if (filtered.error) {
          return new Response(filtered.error, { status: 502 });
        }
        return new Response(filtered.body, { status: response.status, headers: response.headers });
      }
      if (started.mode === 'sse') {
        return new Response(streamThrough(pipe, judged.exchange, response.body), {
          status: response.status,
          headers: response.headers,
        });
      }
      return response;
    }
    const response = await fetch(url, init);
    if (method === 'GET' && (response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      const { exchange } = await pipe.call({ op: 'stream' });
      await pipe.call({ op: 'response', exchange, status: response.status, content_type: 'text/event-stream' });
      return new Response(streamThrough(pipe, exchange, response.body), {
        status: response.status,
        headers: response.headers,
      });
    }
    return response;
  };
}
