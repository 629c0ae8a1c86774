import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postJson } from './delivery-deps.ts';
import { useDeliveryConfig } from './test-delivery.ts';

useDeliveryConfig();

describe('postJson (real HTTP on 127.0.0.1)', () => {
  let server: Server;
  let base = '';
  let mode: 'ok' | 'slow' | 'redirect' = 'ok';
  beforeAll(async () => {
    server = createServer((req, res) => {
      req.resume();
      if (mode === 'slow') return void setTimeout(() => res.end('late'), 400);
      if (mode === 'redirect') return void res.writeHead(302, { location: 'http://169.254.169.254/' }).end();
      res.writeHead(200).end('anything');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  it('returns the status of a fast receiver', async () => {
    mode = 'ok';
    expect(await postJson(new URL(`${base}/h`), {}, '{}', 1000, false)).toEqual({ status: 200 });
  });

  it('times out a slow receiver', async () => {
    mode = 'slow';
    expect(await postJson(new URL(`${base}/h`), {}, '{}', 100, false)).toEqual({
      error: 'timeout after 100 ms',
    });
  });

  it('does not follow redirects', async () => {
    mode = 'redirect';
    expect(await postJson(new URL(`${base}/h`), {}, '{}', 1000, false)).toEqual({ status: 302 });
  });

  it('reports a refused connection', async () => {
    const closed = createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const port = (closed.address() as { port: number }).port;
    await new Promise((r) => closed.close(r));
    expect(await postJson(new URL(`http://127.0.0.1:${port}/`), {}, '{}', 1000, false)).toEqual({
      error: 'ECONNREFUSED',
    });
  });

  it('refuses at connect time a name that resolves to a blocked address', async () => {
    const res = await postJson(new URL(`http://localhost:${new URL(base).port}/h`), {}, '{}', 1000, true);
    expect(res.blocked).toBe(true);
    expect(res.error).toMatch(/is not public/);
  });
});
