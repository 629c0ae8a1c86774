import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { RenderedMessage } from '../render.ts';
import { sendToRobot } from './robot.ts';
import { clearTokenCache, dingWorker } from './work-notice.ts';

/**
 * Provider calls through the one outbound client, against real HTTP servers on 127.0.0.1: robot URLs
 * named by a task go through the URL guard at connect time, and no provider call follows a redirect.
 */
interface Recorder {
  server: Server;
  port: number;
  hits: { url: string; body: string }[];
  handle: (req: IncomingMessage, res: ServerResponse) => void;
}

const robotOk = (_req: IncomingMessage, res: ServerResponse) =>
  res.writeHead(200, { 'content-type': 'application/json' }).end('{"errcode":0,"errmsg":"ok"}');

async function recorder(): Promise<Recorder> {
  const r = { hits: [], handle: robotOk } as unknown as Recorder;
  r.server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      r.hits.push({ url: req.url ?? '', body: Buffer.concat(chunks).toString('utf8') });
      r.handle(req, res);
    });
  });
  await new Promise<void>((ok) => r.server.listen(0, '127.0.0.1', () => ok()));
  r.port = (r.server.address() as AddressInfo).port;
  return r;
}

let robot: Recorder;
let elsewhere: Recorder;
beforeAll(async () => {
  robot = await recorder();
  elsewhere = await recorder();
});
afterAll(async () => {
  for (const r of [robot, elsewhere]) {
    r.server.closeAllConnections();
    await new Promise((ok) => r.server.close(ok));
  }
});
afterEach(() => {
  for (const r of [robot, elsewhere]) {
    r.hits.length = 0;
    r.handle = robotOk;
  }
});

const m: RenderedMessage = { format: 1, title: 'T', body: 'disk full' };
const TOKEN = 'tok0123456789abcdefsecret';
const BASE = 'https://oapi.dingtalk.com/robot/send';
const send = (webhook: string, blockPrivate: boolean) =>
  sendToRobot(BASE, { webhook, secret: 'SECrobot' }, m, {
    timeoutMs: 1000,
    nowMs: 1_700_000_000_000,
    blockPrivate,
  });
const settle = () => new Promise((ok) => setTimeout(ok, 50));

describe('robot webhooks with the guard on (BLOCK_PRIVATE_WEBHOOKS=1)', () => {
  it.each([
    ['127.0.0.1', (p: number) => `http://127.0.0.1:${p}/robot/send?access_token=${TOKEN}`],
    [
      'localhost (resolved at connect time)',
      (p: number) => `http://localhost:${p}/robot/send?access_token=${TOKEN}`,
    ],
    ['[::ffff:7f00:1]', (p: number) => `http://[::ffff:7f00:1]:${p}/robot/send?access_token=${TOKEN}`],
    ['2130706433', (p: number) => `http://2130706433:${p}/robot/send?access_token=${TOKEN}`],
  ])('does not POST to %s: a refusal, not retried, without the token', async (_name, url) => {
    // Act
    const r = await send(url(robot.port), true);
    await settle();
    // Assert
    expect(r).toMatchObject({ outcome: 'rejected', code: 'blocked' });
    expect(r.detail).toMatch(/is not public \(loopback\)$/);
    expect(JSON.stringify(r)).not.toContain(TOKEN);
    expect(robot.hits).toEqual([]);
  });

  it('the same robot is reached when the guard is off (so the refusal above is the guard)', async () => {
    // Act
    const r = await send(`http://127.0.0.1:${robot.port}/robot/send?access_token=${TOKEN}`, false);
    // Assert
    expect(r).toMatchObject({ outcome: 'delivered', code: '0' });
    expect(robot.hits).toHaveLength(1);
    expect(robot.hits[0].url).toMatch(/^\/robot\/send\?access_token=tok.*&timestamp=1700000000000&sign=/);
  });

  it('a robot given as a token goes to the configured base URL, which is not guarded', async () => {
    // Act
    const r = await sendToRobot(`http://127.0.0.1:${robot.port}/robot/send`, { webhook: TOKEN }, m, {
      timeoutMs: 1000,
      nowMs: 1,
      blockPrivate: true,
    });
    // Assert
    expect(r).toMatchObject({ outcome: 'delivered' });
    expect(robot.hits.map((h) => h.url)).toEqual([`/robot/send?access_token=${TOKEN}`]);
  });

  it('refuses a robot URL that cannot be parsed, without calling anyone', async () => {
    // Act
    const r = await send('http://[::1', true);
    // Assert
    expect(r).toEqual({
      outcome: 'rejected',
      code: 'invalid_url',
      detail: 'robot webhook is not a valid URL',
    });
  });
});

describe('no provider call follows a redirect', () => {
  it.each([true, false])(
    'a robot answering 302 is a refusal and the redirect target gets nothing (guard %s)',
    async (guardOn) => {
      // Arrange
      robot.handle = (_req, res) =>
        res.writeHead(302, { location: `http://127.0.0.1:${elsewhere.port}/stolen` }).end();
      // A guarded call cannot reach 127.0.0.1 at all, so the guarded case reaches the robot through
      // its configured base URL (trusted); the unguarded case names it as a whole URL.
      const r = guardOn
        ? await sendToRobot(`http://127.0.0.1:${robot.port}/robot/send`, { webhook: TOKEN }, m, {
            timeoutMs: 1000,
            nowMs: 1,
            blockPrivate: true,
          })
        : await send(`http://127.0.0.1:${robot.port}/robot/send?access_token=${TOKEN}`, false);
      await settle();
      // Assert
      expect(r).toMatchObject({ outcome: 'rejected', code: 'http_302' });
      expect(robot.hits).toHaveLength(1);
      expect(elsewhere.hits).toEqual([]);
    },
  );

  it('a work-notice provider answering 302 to gettoken is not followed', async () => {
    // Arrange
    clearTokenCache();
    robot.handle = (_req, res) =>
      res.writeHead(302, { location: `http://127.0.0.1:${elsewhere.port}/gettoken` }).end();
    const provider = dingWorker(
      { baseUrl: `http://127.0.0.1:${robot.port}`, appKey: 'k', appSecret: 's', agentId: '1' },
      { timeoutMs: 1000, nowMs: () => 1 },
    );
    // Act
    const r = await provider.send(['u1'], m, 'job-1');
    await settle();
    // Assert
    expect(r).toMatchObject({ outcome: 'failed', code: 'gettoken_http_302' });
    expect(robot.hits).toHaveLength(1);
    expect(elsewhere.hits).toEqual([]);
  });
});
