import { request } from 'node:http';
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { baseUrl } from '../support/client.ts';

/**
 * The local API's HTTP edge: HEAD on the pages (answered like GET, without the body), and requests
 * Node's parser refuses (framing errors), answered with the envelope on a raw socket.
 */

/** One request and its whole answer: status, headers and body bytes as received. */
function send(method: string, path: string) {
  return new Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }>(
    (resolve, reject) => {
      const req = request(`${baseUrl()}${path}`, { method }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
      });
      req.on('error', reject);
      req.end();
    },
  );
}

/** Writes `raw` on a fresh connection and reads until the server closes it. */
function raw(text: string): Promise<string> {
  const { hostname, port } = new URL(baseUrl());
  return new Promise((resolve, reject) => {
    const socket = connect({ host: hostname, port: Number(port) });
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.on('connect', () => socket.write(text));
    socket.setTimeout(20_000, () => socket.destroy(new Error('no answer within 20 s')));
  });
}

/** Status line, headers (lower-cased) and body of a raw HTTP/1.1 answer. */
function parse(answer: string) {
  const [head, body] = [
    answer.slice(0, answer.indexOf('\r\n\r\n')),
    answer.slice(answer.indexOf('\r\n\r\n') + 4),
  ];
  const [statusLine, ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(
    lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
  );
  return { statusLine, headers, body };
}

describe('HEAD on the pages', () => {
  it.each(['/console', '/docs', '/openapi.json', '/health'])(
    'HEAD %s answers as GET does, without a body',
    async (path) => {
      // Act
      const get = await send('GET', path);
      const head = await send('HEAD', path);
      // Assert
      expect(get.status).toBe(200);
      expect(get.body.length).toBeGreaterThan(0);
      expect(head.status).toBe(200);
      expect(head.headers['content-type']).toBe(get.headers['content-type']);
      expect(head.body.length).toBe(0);
    },
  );

  it('leaves HEAD of an API route to the not-found answer', async () => {
    const head = await send('HEAD', '/alarmtask/list');
    expect([head.status, head.body.length]).toEqual([404, 0]);
  });
});

describe('framing errors', () => {
  it.each([
    [
      'a header section of 20 KiB',
      `GET /health HTTP/1.1\r\nhost: local\r\nx-big: ${'a'.repeat(20 * 1024)}\r\n\r\n`,
      '431 Request Header Fields Too Large',
      { code: 431, msg: 'request header fields too large', data: {} },
    ],
    [
      'a malformed request line',
      'GET /health HTTP/9.9 extra\r\nhost: local\r\n\r\n',
      '400 Bad Request',
      { code: 400, msg: 'malformed HTTP request', data: {} },
    ],
    [
      'a header line without a colon',
      'GET /health HTTP/1.1\r\nhost: local\r\nnot a header\r\n\r\n',
      '400 Bad Request',
      { code: 400, msg: 'malformed HTTP request', data: {} },
    ],
    [
      'an invalid chunk size',
      'POST /alarm/report HTTP/1.1\r\nhost: local\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n',
      '400 Bad Request',
      { code: 400, msg: 'malformed HTTP request', data: {} },
    ],
  ])(
    '%s: the envelope with the right status, then the connection closes',
    async (_, request, status, body) => {
      // Act
      const answer = parse(await raw(request));
      // Assert
      expect(answer.statusLine).toBe(`HTTP/1.1 ${status}`);
      expect(answer.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(answer.headers.connection).toBe('close');
      expect(Number(answer.headers['content-length'])).toBe(Buffer.byteLength(answer.body));
      expect(JSON.parse(answer.body)).toEqual(body);
    },
  );

  it('still serves the next connection', async () => {
    await raw('BROKEN\r\n\r\n');
    const health = await send('GET', '/health');
    expect(health.status).toBe(200);
  });
});
