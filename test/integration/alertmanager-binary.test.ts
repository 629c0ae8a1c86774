import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, baseUrl, taskAuth } from '../support/client.ts';
import { type Received, TestReceiver } from '../support/receiver.ts';
import { type CreatedTask, createTask } from '../support/tasks.ts';

/**
 * A real Prometheus Alertmanager (Debian's `prometheus-alertmanager`, installed by .ci/run) posts to
 * the local stack with the configuration the README gives: an alert fired through its API reaches the
 * task's webhook as an ALARM, and its resolution as a RECOVERY.
 */
const BINARY = '/usr/bin/prometheus-alertmanager';
const receiver = new TestReceiver();
let am: ChildProcess | undefined;
let amUrl = '';
let dir = '';
let task: CreatedTask;
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
  dir = mkdtempSync(join(tmpdir(), 'tocsin-am-'));
  // The README's configuration, with group_wait 0s so the test does not wait for a flush.
  writeFileSync(
    join(dir, 'alertmanager.yml'),
    [
      'route:',
      '  receiver: tocsin',
      "  group_by: ['alertname', 'instance']",
      '  group_wait: 0s',
      '  group_interval: 1s',
      '  repeat_interval: 4h',
      'receivers:',
      '  - name: tocsin',
      '    webhook_configs:',
      `      - url: '${baseUrl()}/alarm/alertmanager?taskid=${task.id}'`,
      '        send_resolved: true',
      '        max_alerts: 100',
      '        http_config:',
      '          authorization:',
      `            credentials: '${token}'`,
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

const eventsOf = (event: string): Received[] =>
  receiver.received.filter((r) => r.json?.data?.task?.id === task.id && r.json.event === event);

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
