import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, baseUrl, taskAuth } from '../support/client.ts';
import { type Received, TestReceiver } from '../support/receiver.ts';
import { type CreatedTask, createTask } from '../support/tasks.ts';
import { eachOnce } from '../support/chaos.ts';

/**
 * A real Prometheus Alertmanager (Debian's `prometheus-alertmanager`, installed by .ci/run) posts to
 * the local stack with the configuration API guide §8.2 gives: an alert fired through its API reaches the
 * task's webhook as an ALARM, and its resolution as a RECOVERY.
 */
const BINARY = '/usr/bin/prometheus-alertmanager';
const receiver = new TestReceiver();
let am: ChildProcess | undefined;
let amUrl = '';
let dir = '';
let task: CreatedTask;
/** A task limited to 2 alarms per second, routed its own receiver (`tocsin_task: limited`). */
let limited: CreatedTask;
let output = '';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return port;
}

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined, ms = 30_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}; alertmanager said:\n${output.slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

beforeAll(async () => {
  expect(existsSync(BINARY), `${BINARY} (Debian package prometheus-alertmanager; .ci/run installs it)`).toBe(
    true,
  );
  await receiver.start();
  task = await createTask({ receiver: { channels: { email: [1], webhook: receiver.url } } });
  const issued = await api.put('/alarmtask/intake', { ...(await taskAuth(task)) });
  const token = issued.data.intake_token as string;
  limited = await createTask({ receiver: { channels: { email: [1], webhook: receiver.url } } });
  await api.put('/alarmtask/ratelimit', { ...(await taskAuth(limited)), rate_limit: 2 });
  const limitedToken = (await api.put('/alarmtask/intake', { ...(await taskAuth(limited)) })).data
    .intake_token as string;
  dir = mkdtempSync(join(tmpdir(), 'tocsin-am-'));
  // API guide §8.2's configuration, with group_wait 0s so the test does not wait for a flush.
  writeFileSync(
    join(dir, 'alertmanager.yml'),
    [
      'route:',
      '  receiver: tocsin',
      "  group_by: ['alertname', 'instance']",
      '  group_wait: 0s',
      '  group_interval: 1s',
      '  repeat_interval: 4h',
      '  routes:',
      '    - receiver: limited',
      '      matchers: [\'tocsin_task="limited"\']',
      'receivers:',
      '  - name: tocsin',
      '    webhook_configs:',
      `      - url: '${baseUrl()}/alarm/alertmanager?taskid=${task.id}'`,
      '        send_resolved: true',
      '        max_alerts: 100',
      '        http_config:',
      '          authorization:',
      `            credentials: '${token}'`,
      '  - name: limited',
      '    webhook_configs:',
      `      - url: '${baseUrl()}/alarm/alertmanager?taskid=${limited.id}'`,
      '        http_config:',
      '          authorization:',
      `            credentials: '${limitedToken}'`,
      '',
    ].join('\n'),
  );
  const port = await freePort();
  amUrl = `http://127.0.0.1:${port}`;
  am = spawn(
    BINARY,
    [
      `--config.file=${join(dir, 'alertmanager.yml')}`,
      `--storage.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--cluster.listen-address=',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  am.stdout?.on('data', (d) => (output += d));
  am.stderr?.on('data', (d) => (output += d));
  await until('alertmanager to be ready', async () =>
    (await fetch(`${amUrl}/-/ready`).catch(() => undefined))?.ok ? true : undefined,
  );
});

afterAll(async () => {
  am?.kill('SIGTERM');
  await receiver.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The task's events of a kind (each once under the chaos queue, by webhook-id). */
const eventsOf = (event: string): Received[] =>
  eachOnce(
    receiver.received.filter((r) => r.json?.data?.task?.id === task.id && r.json.event === event),
    (r) => r.headers['webhook-id'],
  );

async function postAlert(endsAt?: string) {
  const alert = {
    labels: { alertname: 'TocsinBinaryTest', instance: 'web-1:9100', severity: 'critical' },
    annotations: { summary: 'web-1 is down' },
    startsAt: startsAt,
    ...(endsAt ? { endsAt } : {}),
    generatorURL: 'http://prometheus.example:9090/graph',
  };
  const res = await fetch(`${amUrl}/api/v2/alerts`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify([alert]),
  });
  expect(res.status).toBe(200);
}

const startsAt = new Date(Date.now() - 60_000).toISOString();

describe('a real Prometheus Alertmanager', () => {
  it('delivers a firing alert as an ALARM and its resolution as a RECOVERY', async () => {
    await postAlert();
    const [alarm] = await until('the ALARM', () =>
      eventsOf('ALARM').length > 0 ? eventsOf('ALARM') : undefined,
    );
    const ctn = alarm.json.data.history.ctn as Record<string, unknown>;
    expect(ctn).toMatchObject({
      labels: { alertname: 'TocsinBinaryTest', instance: 'web-1:9100', severity: 'critical' },
      annotations: { summary: 'web-1 is down' },
      generatorURL: 'http://prometheus.example:9090/graph',
    });
    expect(ctn.fingerprint).toMatch(/^[0-9a-f]{16}$/);
    expect(alarm.json.data.history.level).toBe(3);
    await postAlert(new Date().toISOString());
    const [recovery] = await until('the RECOVERY', () =>
      eventsOf('RECOVERY').length > 0 ? eventsOf('RECOVERY') : undefined,
    );
    expect((recovery.json.data.history.ctn as Record<string, unknown>).fingerprint).toBe(ctn.fingerprint);
    expect(eventsOf('ALARM')).toHaveLength(1);
  });
});

describe('a real Prometheus Alertmanager and the rate limit', () => {
  it('a group of more alerts than the task takes per second is refused (429), delivers nothing, and is sent again until the limit allows it', async () => {
    // Arrange: three alerts of one group to a task limited to 2 alarms per second
    const alerts = ['sda', 'sdb', 'sdc'].map((device) => ({
      labels: { alertname: 'DiskFull', instance: 'db-1:9100', device, tocsin_task: 'limited' },
      annotations: { summary: `${device} is full` },
      startsAt,
      generatorURL: 'http://prometheus.example:9090/graph',
    }));
    const of = () =>
      eachOnce(
        receiver.received.filter((r) => r.json?.data?.task?.id === limited.id && r.json.event === 'ALARM'),
        (r) => r.headers['webhook-id'],
      );
    const failures = async () => {
      const text = await (await fetch(`${amUrl}/metrics`)).text();
      const line = text
        .split('\n')
        .find((l) => l.startsWith('alertmanager_notifications_failed_total{integration="webhook"'));
      return Number(line?.split(' ').pop() ?? 0);
    };
    const before = await failures();
    // Act: Alertmanager posts the group and is refused at every flush
    const res = await fetch(`${amUrl}/api/v2/alerts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(alerts),
    });
    expect(res.status).toBe(200);
    await until('two refused notifications', async () =>
      (await failures()) >= before + 2 ? true : undefined,
    );
    const whileRefused = of().length;
    // ...until the task's limit takes three a second
    await api.put('/alarmtask/ratelimit', { ...(await taskAuth(limited)), rate_limit: 3 });
    await until('the group', () => (of().length >= 3 ? true : undefined));
    // Assert
    expect(whileRefused).toBe(0);
    expect(
      of()
        .map((r) => r.json.data.history.ctn.labels.device)
        .sort(),
    ).toEqual(['sda', 'sdb', 'sdc']);
  });
});
