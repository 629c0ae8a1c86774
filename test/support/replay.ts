import { GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { advanceClock, nowSeconds } from '../../shared/clock.ts';
import { hmacSign } from '../../shared/domain/auth/signature.ts';
import { reportAlarm } from '../../shared/domain/alarms/report.ts';
import type { ReplayAnswer, ReplayDone } from '../../shared/domain/replay/responses.ts';
import type { Envelope } from './client.ts';
import { TEST_APP } from './seed.ts';

/**
 * The what-if replay suites' calls to a stack given by its URL (the shared test stack, or a stack of a
 * suite's own): signed as the test app (which holds the grant `read`), alarms reported through the
 * report route's own code in this process, and replays waited for when they run on their queue.
 */
export class StackClient {
  constructor(readonly url: string) {}

  async now(): Promise<number> {
    const res = await fetch(`${this.url}/_local/clock`);
    return ((await res.json()) as { data: { now: number } }).data.now;
  }

  /** Moves the service clock forward and runs the due work. */
  async advance(seconds: number): Promise<number> {
    const res = await fetch(`${this.url}/_local/clock`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ advance_seconds: seconds }),
    });
    return ((await res.json()) as { data: { now: number } }).data.now;
  }

  async call<T = Record<string, unknown>>(
    method: string,
    path: string,
    opts: { query?: Record<string, string | number>; json?: unknown; app?: typeof TEST_APP } = {},
  ): Promise<Envelope<T>> {
    const app = opts.app ?? TEST_APP;
    const ts = await this.now();
    const url = new URL(path, this.url);
    for (const [k, v] of Object.entries(opts.query ?? {})) url.searchParams.set(k, String(v));
    const res = await fetch(url, {
      method,
      headers: {
        'x-app-id': String(app.id),
        'x-app-timestamp': String(ts),
        'x-app-sign': hmacSign(app.token, app.id, ts),
        ...(opts.json !== undefined ? { 'content-type': 'application/json' } : {}),
      },
      body: opts.json !== undefined ? JSON.stringify(opts.json) : undefined,
    });
    const body = (await res.json()) as { code: number; msg: string; data: T };
    return { status: res.status, code: body.code, msg: body.msg, data: body.data as Envelope<T>['data'] };
  }

  /** A task through `POST /alarmtask/store` (creator 1, department 1). */
  async createTask(body: Record<string, unknown>): Promise<{ id: number; token: string; secret: string }> {
    const res = await this.call<{ task: { id: number; token: string; secret: string } }>(
      'POST',
      '/alarmtask/store',
      { json: { created_by: 1, department_id: 1, flag_save_db: 1, ...body } },
    );
    if (res.code !== 0) throw new Error(`task create refused: ${res.code} ${res.msg}`);
    return res.data.task;
  }

  /** A task request signed with its secret (update, updatefields, pause ...). */
  async taskCall(
    method: string,
    path: string,
    task: { id: number; secret: string },
    json: Record<string, unknown>,
  ): Promise<Envelope> {
    const ts = await this.now();
    return this.call(method, path, {
      json: { id: task.id, timestamp: String(ts), sign: hmacSign(task.secret, task.id, ts), ...json },
    });
  }

  /** Reports alarms at once (the report route's code, in this process); returns their uuids. */
  async report(
    task: { id: number; token: string },
    alarms: { ctn: Record<string, unknown>; level?: number; uuid?: string }[],
  ): Promise<string[]> {
    const ts = await this.now();
    // The report route's code runs here, on this process's clock: other suites may have moved the
    // stack's clock ahead of it.
    if (ts > nowSeconds()) advanceClock(ts - nowSeconds());
    const sign = hmacSign(task.token, task.id, ts);
    const answers = await Promise.all(
      alarms.map((a) => reportAlarm({ taskid: task.id, timestamp: ts, sign, ...a })),
    );
    return answers.map((a) => a.uuid);
  }

  /**
   * A replay: its answer when it answers at once, else (it runs on its queue) read back with
   * `GET /alarmtask/replay` until it is done.
   */
  async replay(body: Record<string, unknown>, timeoutMs = 240_000): Promise<ReplayDone> {
    const started = await this.call<ReplayAnswer>('POST', '/alarmtask/replay', { json: { uid: 1, ...body } });
    if (started.code !== 0) throw new Error(`replay refused: ${started.code} ${started.msg}`);
    let answer = started.data as ReplayAnswer;
    const deadline = Date.now() + timeoutMs;
    while (answer.status === 'running') {
      if (Date.now() > deadline) throw new Error(`replay ${answer.replay_id} still running`);
      await new Promise((r) => setTimeout(r, 500));
      const res = await this.call<ReplayAnswer>('GET', '/alarmtask/replay', {
        query: { uid: 1, replay_id: answer.replay_id },
      });
      answer = res.data as ReplayAnswer;
    }
    if (answer.status === 'failed')
      throw new Error(`replay failed: ${answer.error.code} ${answer.error.msg}`);
    return answer;
  }
}

/** Waits until the named queues of a stack are empty (nothing visible, in flight or delayed). */
export async function drained(
  stack: { region: string; sqsEndpoint: string; queueUrls: Record<string, string> },
  queues: string[] = ['alarm'],
  timeoutMs = 180_000,
): Promise<void> {
  const sqs = new SQSClient({
    region: stack.region,
    endpoint: stack.sqsEndpoint,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  try {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      let busy = false;
      for (const url of queues.map((q) => stack.queueUrls[q])) {
        const out = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['All'] }));
        const a: Record<string, string | undefined> = out.Attributes ?? {};
        busy ||= [
          'ApproximateNumberOfMessages',
          'ApproximateNumberOfMessagesNotVisible',
          'ApproximateNumberOfMessagesDelayed',
        ].some((k) => Number(a[k] ?? 0) > 0);
      }
      if (!busy) return;
      if (Date.now() > deadline) throw new Error('queues not drained in time');
      await new Promise((r) => setTimeout(r, 50));
    }
  } finally {
    sqs.destroy();
  }
}
