import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Worker } from 'node:worker_threads';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { outboundRequest } from './client.ts';

/** A real HTTP server on 127.0.0.1 that records what reaches it. */
interface Recorder {
  server: Server;
  port: number;
  base: string;
  hits: { method: string; url: string; body: string }[];
  /** Connections accepted. */
  connections: Socket[];
  handle: (req: IncomingMessage, res: ServerResponse, body: string) => void;
}

async function recorder(): Promise<Recorder> {
  const r = {
    hits: [],
    connections: [],
    handle: (_req: IncomingMessage, res: ServerResponse) => res.writeHead(200).end('ok'),
  } as unknown as Recorder;
  r.server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      r.hits.push({ method: req.method ?? '', url: req.url ?? '', body });
      r.handle(req, res, body);
    });
  });
  r.server.on('connection', (s) => r.connections.push(s));
  await new Promise<void>((ok) => r.server.listen(0, '127.0.0.1', () => ok()));
  r.port = (r.server.address() as AddressInfo).port;
  r.base = `http://127.0.0.1:${r.port}`;
  return r;
}

async function stop(r: Recorder) {
  r.server.closeAllConnections();
  await new Promise((ok) => r.server.close(ok));
}

let a: Recorder;
let b: Recorder;
beforeAll(async () => {
  a = await recorder();
  b = await recorder();
});
afterAll(async () => {
  await stop(a);
  await stop(b);
});
afterEach(async () => {
  // Each test starts with fresh connections (the client has seen the old ones close) and default handlers.
  for (const r of [a, b]) {
    r.server.closeAllConnections();
    r.hits.length = 0;
    r.connections.length = 0;
    r.handle = (_req, res) => res.writeHead(200).end('ok');
  }
  await new Promise((ok) => setTimeout(ok, 20));
});

const post = (url: string, extra: Partial<Parameters<typeof outboundRequest>[1]> = {}) =>
  outboundRequest(url, { method: 'POST', body: '{"a":1}', timeoutMs: 1000, guard: false, ...extra });

describe('outboundRequest (real HTTP on 127.0.0.1)', () => {
  it('POSTs the body with its length and returns the status and, when asked, the text', async () => {
    // Arrange
    a.handle = (_req, res) => res.writeHead(201, { 'content-type': 'application/json' }).end('{"errcode":0}');
    // Act
    const r = await post(`${a.base}/x?y=1`, {
      headers: { 'content-type': 'application/json' },
      readBodyBytes: 1000,
    });
    // Assert
    expect(r).toEqual({ ok: true, status: 201, body: '{"errcode":0}', truncated: false });
    expect(a.hits).toEqual([{ method: 'POST', url: '/x?y=1', body: '{"a":1}' }]);
  });

  it('sends a GET without a body', async () => {
    // Act
    const r = await outboundRequest(`${a.base}/t`, {
      method: 'GET',
      timeoutMs: 1000,
      guard: false,
      readBodyBytes: 10,
    });
    // Assert
    expect(r).toMatchObject({ ok: true, status: 200, body: 'ok' });
    expect(a.hits).toEqual([{ method: 'GET', url: '/t', body: '' }]);
  });

  it('keeps the connection alive: consecutive calls share one connection', async () => {
    // Arrange
    a.handle = (_req, res) => res.writeHead(200).end('x'.repeat(2000));
    // Act
    const first = await post(`${a.base}/1`);
    const second = await post(`${a.base}/2`, { readBodyBytes: 10_000 });
    const third = await post(`${a.base}/3`);
    // Assert
    expect([first, second, third].map((r) => r.ok && r.status)).toEqual([200, 200, 200]);
    expect(a.hits.map((h) => h.url)).toEqual(['/1', '/2', '/3']);
    expect(a.connections).toHaveLength(1);
  });

  it('keeps every connection of a burst of parallel calls for the next burst', async () => {
    // Arrange: answers come after a moment, so the calls of a burst overlap.
    a.handle = (_req, res) => setTimeout(() => res.writeHead(200).end('ok'), 30);
    const burst = (n: number) =>
      Promise.all(Array.from({ length: 40 }, (_, i) => post(`${a.base}/${n}-${i}`)));
    // Act
    const first = await burst(1);
    const second = await burst(2);
    // Assert
    expect([...first, ...second].every((r) => r.ok && r.status === 200)).toBe(true);
    expect(a.hits).toHaveLength(80);
    expect(a.connections).toHaveLength(40);
  });

  it('closes (does not pool) a connection whose discarded body is too long to drain', async () => {
    // Arrange
    a.handle = (req, res) => res.writeHead(200).end(req.url === '/big' ? 'x'.repeat(1024 * 1024) : 'ok');
    // Act
    const big = await post(`${a.base}/big`);
    await new Promise((ok) => setTimeout(ok, 50));
    const next = await post(`${a.base}/next`);
    // Assert
    expect(big).toMatchObject({ ok: true, status: 200 });
    expect(next).toMatchObject({ ok: true, status: 200 });
    expect(a.connections).toHaveLength(2);
  });

  it('cuts a body longer than readBodyBytes', async () => {
    // Arrange
    a.handle = (_req, res) => res.writeHead(200).end('0123456789'.repeat(100));
    // Act
    const r = await post(`${a.base}/`, { readBodyBytes: 25 });
    // Assert
    expect(r).toEqual({ ok: true, status: 200, body: '0123456789012345678901234', truncated: true });
  });

  it('sends once more on a fresh connection when a pooled one was closed by the peer', async () => {
    // Arrange: the server drops a kept-alive connection when it is used a second time.
    const served = new WeakSet<Socket>();
    a.handle = (req, res) => {
      if (served.has(req.socket)) return void req.socket.destroy();
      served.add(req.socket);
      res.writeHead(200).end('ok');
    };
    // Act
    const first = await post(`${a.base}/1`);
    const second = await post(`${a.base}/2`);
    // Assert
    expect(first).toMatchObject({ ok: true, status: 200 });
    expect(second).toMatchObject({ ok: true, status: 200 });
    expect(a.connections).toHaveLength(2);
  });

  it('times out when the answer does not come in time', async () => {
    // Arrange
    a.handle = (_req, res) => void setTimeout(() => res.writeHead(200).end('late'), 400);
    // Act
    const started = Date.now();
    const r = await post(`${a.base}/slow`, { timeoutMs: 100 });
    // Assert
    expect(r).toEqual({ ok: false, failure: 'timeout', error: 'timeout after 100 ms' });
    expect(Date.now() - started).toBeLessThan(350);
  });

  it('takes an answer that came in time while this thread was busy past the deadline', async () => {
    // Arrange: a receiver in a worker thread that answers at once (raising a flag for /busy), and a
    // kept-alive connection to it (a request on it is written at once, with no turn of the loop)
    const flag = new Int32Array(new SharedArrayBuffer(4));
    const receiver = new Worker(
      `const { workerData: flag, parentPort } = require('node:worker_threads');
      const server = require('node:http').createServer((req, res) => {
        req.resume();
        req.on('end', () => res.writeHead(200).end('ok', () => {
          if (req.url === '/busy') { Atomics.store(flag, 0, 1); Atomics.notify(flag, 0); }
        }));
      });
      server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));`,
      { eval: true, workerData: flag },
    );
    try {
      const port = await new Promise<number>((ok) => receiver.once('message', ok));
      expect(await post(`http://127.0.0.1:${port}/warm`)).toMatchObject({ status: 200 });
      // Act: the request goes out on the kept-alive connection; this thread then stays busy until
      // the answer is there and the deadline has passed
      const started = performance.now();
      const pending = post(`http://127.0.0.1:${port}/busy`, { timeoutMs: 100 });
      await new Promise((ok) => process.nextTick(ok));
      // ('not-equal': the answer was there before this thread began to wait)
      expect(Atomics.wait(flag, 0, 0, 5_000)).not.toBe('timed-out');
      expect(Atomics.load(flag, 0)).toBe(1);
      while (performance.now() - started < 150) {
        // busy
      }
      // Assert
      expect(await pending).toMatchObject({ ok: true, status: 200 });
    } finally {
      await receiver.terminate();
    }
  });

  it('times out when a body that must be read does not end in time', async () => {
    // Arrange
    a.handle = (_req, res) => {
      res.writeHead(200);
      res.write('{"errcode":');
      setTimeout(() => res.end('0}'), 400);
    };
    // Act
    const r = await post(`${a.base}/trickle`, { timeoutMs: 100, readBodyBytes: 1000 });
    // Assert
    expect(r).toEqual({ ok: false, failure: 'timeout', error: 'timeout after 100 ms' });
  });

  it('does not wait for a discarded body: the status is the answer', async () => {
    // Arrange
    a.handle = (_req, res) => {
      res.writeHead(200);
      res.write('partial');
      setTimeout(() => res.end(), 400);
    };
    // Act
    const r = await post(`${a.base}/trickle`, { timeoutMs: 100 });
    // Assert
    expect(r).toEqual({ ok: true, status: 200, body: '', truncated: false });
  });

  it('never follows a redirect: the 3xx is the answer and its target gets nothing', async () => {
    // Arrange
    a.handle = (_req, res) => res.writeHead(302, { location: `${b.base}/stolen` }).end();
    // Act
    const r = await post(`${a.base}/hook`, { readBodyBytes: 100 });
    await new Promise((ok) => setTimeout(ok, 50));
    // Assert
    expect(r).toMatchObject({ ok: true, status: 302 });
    expect(b.hits).toEqual([]);
    expect(b.connections).toHaveLength(0);
  });

  it('reports a refused connection by its code', async () => {
    // Arrange
    const closed = await recorder();
    await stop(closed);
    // Act
    const r = await post(`${closed.base}/`);
    // Assert
    expect(r).toEqual({ ok: false, failure: 'network', error: 'ECONNREFUSED' });
  });

  it('refuses what is not an http(s) URL', async () => {
    // Act / Assert
    expect(await post('file:///etc/passwd')).toEqual({
      ok: false,
      failure: 'invalid',
      error: 'unsupported scheme',
    });
    expect(await post('not a url')).toEqual({ ok: false, failure: 'invalid', error: 'invalid url' });
  });
});

describe('outboundRequest with the guard on', () => {
  it.each([
    ['127.0.0.1', (port: number) => `http://127.0.0.1:${port}/x?access_token=tok`],
    ['2130706433', (port: number) => `http://2130706433:${port}/x`],
    ['0x7f.1', (port: number) => `http://0x7f.1:${port}/x`],
    ['127.1', (port: number) => `http://127.1:${port}/x`],
    ['[::ffff:7f00:1]', (port: number) => `http://[::ffff:7f00:1]:${port}/x`],
    ['[::ffff:127.0.0.1]', (port: number) => `http://[::ffff:127.0.0.1]:${port}/x`],
  ])('refuses the IP literal %s without connecting', async (_name, url) => {
    // Act
    const r = await post(url(a.port), { guard: true });
    // Assert
    expect(r).toMatchObject({ ok: false, failure: 'blocked' });
    expect((r as { error: string }).error).toMatch(/^address .* is not public \(loopback\)$/);
    expect(a.connections).toHaveLength(0);
    expect(a.hits).toEqual([]);
  });

  it('refuses at connect time a name that resolves to a blocked address', async () => {
    // Act
    const r = await post(`http://localhost:${a.port}/x`, { guard: true });
    // Assert
    expect(r).toEqual({ ok: false, failure: 'blocked', error: 'address 127.0.0.1 is not public (loopback)' });
    expect(a.connections).toHaveLength(0);
  });

  it('the same odd spellings reach the server when the guard is off (so the refusals above are real)', async () => {
    // Act
    const results = await Promise.all(
      [`http://2130706433:${a.port}/x`, `http://0x7f.1:${a.port}/x`, `http://localhost:${a.port}/x`].map(
        (u) => post(u),
      ),
    );
    // Assert
    expect(results.map((r) => r.ok && r.status)).toEqual([200, 200, 200]);
    expect(a.hits).toHaveLength(3);
  });
});
