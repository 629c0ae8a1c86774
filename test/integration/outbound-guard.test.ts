import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nowSeconds } from '../../shared/clock.ts';
import { resetConfig } from '../../shared/config/env.ts';
import { hmacSign } from '../../shared/domain/auth/signature.ts';
import { deliverNotification } from '../../shared/domain/notifications/delivery.ts';
import { getJobState, listAttemptsOfJob } from '../../shared/domain/notifications/repository.ts';
import { getTask } from '../../shared/domain/tasks/repository.ts';
import { openRobot } from '../../shared/domain/channels/robots.ts';
import { lambdaContext } from '../../shared/local/lambda.ts';
import type { NotificationJob } from '../../shared/contracts/messages.ts';
import { TEST_APP } from '../support/seed.ts';
import { taskBody } from '../support/tasks.ts';

/**
 * API guide §12.7, save time, through the real handlers and the local table, with the guard on.
 *
 * The shared local stack runs with BLOCK_PRIVATE_WEBHOOKS off (local receivers live on this machine),
 * and its environment is not this suite's to change. So this suite is a second handler environment:
 * it runs the real Lambda handlers of /alarmtask/store, /update and /updatefields in this worker,
 * with BLOCK_PRIVATE_WEBHOOKS=1, against the same DynamoDB Local the stack uses. At send time it runs
 * the notification consumer's use case in this worker too, with the robot base URL pointed at a
 * robot on 127.0.0.1 (operator configuration, trusted) to show that a 302 is not followed.
 */
let robot: Server;
let robotHits = 0;
let robotUrl = '';
/** What the robot answers; `elsewhere` records what reaches the target of its redirect. */
let robotAnswer: 'ok' | 'redirect' = 'ok';
let elsewhere: Server;
let elsewhereHits = 0;

type Handler = (
  event: APIGatewayProxyEventV2,
  context: unknown,
) => Promise<APIGatewayProxyStructuredResultV2>;
const handlers: Record<string, Handler> = {};

beforeAll(async () => {
  // Anything that reaches `elsewhere` is recorded.
  elsewhere = createServer((req, res) => {
    elsewhereHits++;
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"errcode":0}');
  });
  await new Promise<void>((ok) => elsewhere.listen(0, '127.0.0.1', () => ok()));
  const elsewherePort = (elsewhere.address() as AddressInfo).port;
  // A robot on 127.0.0.1 that records anything that reaches it.
  robot = createServer((req, res) => {
    robotHits++;
    req.resume();
    if (robotAnswer === 'redirect')
      return void res.writeHead(302, { location: `http://127.0.0.1:${elsewherePort}/robot/send` }).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"errcode":0}');
  });
  await new Promise<void>((ok) => robot.listen(0, '127.0.0.1', () => ok()));
  const port = (robot.address() as AddressInfo).port;
  robotUrl = `http://127.0.0.1:${port}/robot/send?access_token=tok-secret-0123456789`;
  Object.assign(process.env, {
    BLOCK_PRIVATE_WEBHOOKS: '1',
    ROBOT_DING_BASE_URL: `http://127.0.0.1:${port}/robot/send`,
  });
  resetConfig();
  for (const [route, file] of [
    ['store', 'store-task'],
    ['update', 'update-task'],
    ['updatefields', 'update-task-fields'],
  ]) {
    handlers[route] = (await import(`../../functions/http/alarmtask/${file}.ts`)).handler as Handler;
  }
});

afterAll(async () => {
  delete process.env.BLOCK_PRIVATE_WEBHOOKS;
  delete process.env.ROBOT_DING_BASE_URL;
  resetConfig();
  for (const server of [robot, elsewhere]) {
    server.closeAllConnections();
    await new Promise((ok) => server.close(ok));
  }
});

interface Answer {
  status: number;
  code: number;
  msg: string;
  // biome-ignore lint/suspicious/noExplicitAny: response shapes vary per endpoint
  data: any;
}

/** Calls a handler as API Gateway would, signed with the test app. */
async function invoke(route: 'store' | 'update' | 'updatefields', body: unknown): Promise<Answer> {
  const ts = nowSeconds();
  const method = route === 'store' ? 'POST' : 'PUT';
  const path = `/alarmtask/${route}`;
  const event: APIGatewayProxyEventV2 = {
    version: '2.0',
    routeKey: `${method} ${path}`,
    rawPath: path,
    rawQueryString: '',
    headers: {
      'content-type': 'application/json',
      'x-app-id': String(TEST_APP.id),
      'x-app-timestamp': String(ts),
      'x-app-sign': hmacSign(TEST_APP.token, TEST_APP.id, ts),
    },
    requestContext: {
      accountId: '000000000000',
      apiId: 'local',
      domainName: 'localhost',
      domainPrefix: 'local',
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'test' },
      requestId: randomUUID(),
      routeKey: `${method} ${path}`,
      stage: '$default',
      time: new Date().toISOString(),
      timeEpoch: Date.now(),
    },
    body: JSON.stringify(body),
    isBase64Encoded: false,
  };
  const res = await handlers[route](event, lambdaContext(`alarmtask-${route}`));
  const parsed = JSON.parse(res.body ?? '{}') as Omit<Answer, 'status'>;
  return { status: res.statusCode ?? 0, ...parsed };
}

const taskAuth = (t: { id: number; secret: string }) => {
  const ts = nowSeconds();
  return { id: t.id, timestamp: String(ts), sign: hmacSign(t.secret, t.id, ts) };
};

const cond = [{ rule: [{ field: 'ctn.host', operator: 'eq', threshold: 'a' }] }];
const robots = () => [{ webhook: robotUrl }];

/** Each receiver location a task can name a robot or webhook in, with the field a refusal names. */
const LOCATIONS: [string, () => Record<string, unknown>][] = [
  ['receiver.channels.webhook', () => ({ receiver: { channels: { webhook: 'http://[::ffff:7f00:1]/' } } })],
  [
    'receiver.channels.webhook',
    () => ({ receiver: { channels: { webhook: { url: 'http://[::ffff:7f00:1]/' } } } }),
  ],
  [
    'receiver.channels.dinggroup.0.webhook',
    () => ({ receiver: { channels: { dinggroup: [{ webhook: robotUrl, secret: 'SECa' }] } } }),
  ],
  [
    'receiver.channels.yachgroup.1.webhook',
    () => ({
      receiver: {
        channels: {
          yachgroup: [
            { webhook: 'a-token', secret: 'SECa' },
            { webhook: robotUrl, secret: 'SECb' },
          ],
        },
      },
    }),
  ],
  [
    'receiver.dispatch.0.receiver.channels.dinggroup.0.webhook',
    () => ({
      receiver: {
        channels: { email: [1] },
        dispatch: [{ conditions: cond, receiver: { channels: { dinggroup: robots() } } }],
      },
    }),
  ],
  [
    'workflow.reminds.0.receiver.channels.dinggroup.0.webhook',
    () => ({
      workflow: {
        enable: true,
        reminds: [
          {
            mode: 'once',
            status: 1,
            interval: 5,
            reuse_receiver: 0,
            receiver: { channels: { dinggroup: robots() } },
          },
        ],
      },
    }),
  ],
  [
    'upgrade.strategies.0.receiver.channels.yachgroup.0.webhook',
    () => ({
      upgrade: {
        enable: true,
        strategies: [
          {
            interval: 5,
            count: 1,
            level: 2,
            reuse_receiver: 0,
            receiver: { channels: { yachgroup: robots() } },
          },
        ],
      },
    }),
  ],
];

const REFUSED =
  /^must not point to a private or reserved address \((::ffff:7f00:1|127\.0\.0\.1), loopback\)$/;

function expectRefused(res: Answer, field: string) {
  expect(res.status).toBe(422);
  expect(res.code).toBe(422);
  expect(res.data.errors).toHaveLength(1);
  expect(res.data.errors[0].field).toBe(field);
  expect(res.data.errors[0].message).toMatch(REFUSED);
  expect(res.msg).toBe(`${field} ${res.data.errors[0].message}`);
  expect(JSON.stringify(res)).not.toContain('tok-secret');
}

/** A task created through the guarded handler, with an e-mail receiver only. */
async function plainTask() {
  const res = await invoke('store', taskBody());
  expect(res.code).toBe(0);
  return res.data.task as { id: number; secret: string; name: string };
}

describe('outbound URL guard at save time (BLOCK_PRIVATE_WEBHOOKS=1, real handlers and table)', () => {
  it.each(LOCATIONS)('POST /alarmtask/store refuses %s with 422 and stores nothing', async (field, over) => {
    // Arrange
    const body = taskBody(over());
    // Act
    const res = await invoke('store', body);
    // Assert
    expectRefused(res, field);
    const again = await invoke('store', taskBody({ name: body.name }));
    expect(again.code).toBe(0); // the name was not taken: nothing of the refused task was written
    expect(robotHits).toBe(0);
  });

  it.each(LOCATIONS)('PUT /alarmtask/update refuses %s with 422 and keeps the task', async (field, over) => {
    // Arrange
    const t = await plainTask();
    const before = await getTask(t.id, true);
    // Act
    const res = await invoke('update', { ...taskBody(over()), ...taskAuth(t) });
    // Assert
    expectRefused(res, field);
    expect(await getTask(t.id, true)).toEqual(before);
  });

  it.each(LOCATIONS)(
    'PUT /alarmtask/updatefields refuses %s with 422 and keeps the task',
    async (field, over) => {
      // Arrange
      const t = await plainTask();
      const before = await getTask(t.id, true);
      const fields = over();
      // Act
      const res = await invoke('updatefields', {
        ...fields,
        filter_fields: Object.keys(fields),
        ...taskAuth(t),
      });
      // Assert
      expectRefused(res, field);
      expect(await getTask(t.id, true)).toEqual(before);
    },
  );

  it('refuses a name that resolves to a blocked address', async () => {
    // Arrange
    const port = (robot.address() as AddressInfo).port;
    // Act
    const res = await invoke(
      'store',
      taskBody({
        receiver: { channels: { dinggroup: [{ webhook: `http://localhost:${port}/r`, secret: 's' }] } },
      }),
    );
    // Assert
    expect(res.status).toBe(422);
    expect(res.msg).toBe(
      'receiver.channels.dinggroup.0.webhook must not point to a private or reserved address (resolves to 127.0.0.1, loopback)',
    );
  });

  it('lists every refused field at once', async () => {
    // Act
    const res = await invoke(
      'store',
      taskBody({
        receiver: {
          channels: { webhook: 'http://10.0.0.1/', dinggroup: [{ webhook: robotUrl, secret: 's' }] },
        },
      }),
    );
    // Assert
    expect(res.status).toBe(422);
    expect(res.data.errors.map((e: { field: string }) => e.field)).toEqual([
      'receiver.channels.webhook',
      'receiver.channels.dinggroup.0.webhook',
    ]);
  });

  it('accepts robot tokens, public addresses and names that do not resolve', async () => {
    // Act
    const res = await invoke(
      'store',
      taskBody({
        receiver: {
          channels: {
            dinggroup: [
              { webhook: 'a-robot-token', secret: 's' },
              { webhook: 'https://8.8.8.8/robot/send', secret: 's' },
              { webhook: 'https://robot.invalid/send', secret: 's' },
            ],
          },
        },
      }),
    );
    // Assert
    expect(res.code).toBe(0);
    const stored = await getTask(res.data.task.id, true);
    // Robots are stored sealed: opened, they are what was sent.
    expect(stored?.receiver.channels?.dinggroup?.map((r) => openRobot(r).webhook)).toEqual([
      'a-robot-token',
      'https://8.8.8.8/robot/send',
      'https://robot.invalid/send',
    ]);
  });
});

/** A dinggroup job as the pipeline builds it. */
function robotJob(taskId: number, webhook: string): NotificationJob {
  return {
    kind: 'notify',
    job_id: `guard-${randomUUID()}:not_compress:dinggroup`,
    task_id: taskId,
    scene: 'not_compress',
    channel: 'dinggroup',
    robots: [{ webhook, secret: 'SECrobot' }],
    context: {
      task: { id: taskId, name: 'guarded' },
      history: {
        id: 1,
        uuid: randomUUID(),
        batch: 0,
        metric: '',
        level: 2,
        leve: 2,
        ctn: { host: 'web-1' },
        notice_time: 1,
      },
    },
  };
}

describe('outbound URL guard at send time (the notification consumer, BLOCK_PRIVATE_WEBHOOKS=1)', () => {
  it('does not POST to a robot URL on a blocked address: the attempt is refused, not retried', async () => {
    // Arrange: a robot stored before the guard was on (or by a report override) can still be sent to.
    const t = await plainTask();
    const job = robotJob(t.id, robotUrl);
    const hitsBefore = robotHits;
    // Act
    const verdict = await deliverNotification(JSON.stringify(job), 1);
    // Assert
    expect(verdict).toBe('done');
    expect(robotHits).toBe(hitsBefore);
    expect((await getJobState(job.job_id))?.status).toBe('rejected');
    const attempts = await listAttemptsOfJob(job.job_id);
    expect(attempts.map((a) => [a.outcome, a.code, a.detail])).toEqual([
      ['rejected', 'blocked', 'address 127.0.0.1 is not public (loopback)'],
    ]);
    expect(JSON.stringify(attempts)).not.toContain('tok-secret-0123456789');
  });

  it('does not follow a robot that answers 302: the redirect target gets nothing', async () => {
    // Arrange: a robot token goes to the configured base URL (this robot), which answers 302.
    const t = await plainTask();
    const job = robotJob(t.id, 'a-robot-token-0123456789');
    robotAnswer = 'redirect';
    const hitsBefore = robotHits;
    // Act
    const verdict = await deliverNotification(JSON.stringify(job), 1);
    await new Promise((ok) => setTimeout(ok, 100));
    robotAnswer = 'ok';
    // Assert
    expect(verdict).toBe('done');
    expect(robotHits).toBe(hitsBefore + 1);
    expect(elsewhereHits).toBe(0);
    const attempts = await listAttemptsOfJob(job.job_id);
    expect(attempts.map((a) => [a.outcome, a.code])).toEqual([['rejected', 'http_302']]);
  });
});

describe('outbound URL guard on a report override (POST /alarm/report, BLOCK_PRIVATE_WEBHOOKS=1)', () => {
  it.each([
    ['receiver.channels.dinggroup.0.webhook', () => ({ channels: { dinggroup: [{ webhook: robotUrl }] } })],
    ['receiver.channels.webhook', () => ({ channels: { webhook: 'http://[::ffff:7f00:1]/' } })],
    [
      'receiver.channels.webhook.1',
      () => ({ channels: { webhook: ['https://example.com/', 'http://169.254.169.254/'] } }),
    ],
  ])('refuses %s with code 4000 in an HTTP 200 answer', async (field, receiver) => {
    // Arrange: a task created through the guarded store handler, its token from the answer
    const created = await invoke('store', taskBody());
    const t = created.data.task as { id: number; token: string };
    const report = (await import('../../functions/alarm/report-alarm.ts')).handler as Handler;
    const ts = nowSeconds();
    const body = {
      taskid: t.id,
      timestamp: ts,
      sign: hmacSign(t.token, t.id, ts),
      ctn: { a: 1 },
      receiver: receiver(),
    };
    const event = {
      version: '2.0',
      routeKey: 'POST /alarm/report',
      rawPath: '/alarm/report',
      rawQueryString: '',
      headers: { 'content-type': 'application/json' },
      requestContext: { http: { method: 'POST', path: '/alarm/report' }, requestId: randomUUID() },
      body: JSON.stringify(body),
      isBase64Encoded: false,
    } as unknown as APIGatewayProxyEventV2;
    // Act
    const res = await report(event, lambdaContext('alarm-report'));
    // Assert
    const answer = JSON.parse(res.body ?? '{}') as { code: number; msg: string };
    expect(res.statusCode).toBe(200);
    expect(answer.code).toBe(4000);
    expect(answer.msg).toMatch(
      new RegExp(`^${field.replace(/\./g, '\\.')} must not point to a private or reserved address`),
    );
    expect(answer.msg).not.toContain('tok-secret');
  });
});
