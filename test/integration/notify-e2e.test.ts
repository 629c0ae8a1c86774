import { createHmac, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { hmacSign } from '../../shared/domain/auth/signature.ts';
import { listRecentAttemptsOfTask as webhookAttemptsOfTask } from '../../shared/domain/webhooks/repository.ts';
import { call, serviceNow } from '../support/client.ts';
import { FakeClient } from '../support/fakes.ts';
import { TestReceiver } from '../support/receiver.ts';
import { createTask } from '../support/tasks.ts';
import { recentNotificationAttempts } from '../support/notifications.ts';
import { eachOnce } from '../support/chaos.ts';

/**
 * End to end: an alarm reported through POST /alarm/report to a task with dinggroup, email and webhook
 * receivers ends as a signed robot POST, an e-mail in the local SMTP server and a webhook call, each
 * recorded as a delivery attempt.
 */
const fakes = new FakeClient(inject('fakes').url);
const receiver = new TestReceiver();

beforeAll(async () => {
  await receiver.start();
});
afterAll(async () => {
  await receiver.stop();
});

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('an alarm reported to a task with robot, e-mail and webhook receivers', () => {
  it('reaches every channel and every delivery is recorded', async () => {
    // Arrange
    const token = `tok${randomUUID().replace(/-/g, '')}`;
    const secret = `SEC${randomUUID().replace(/-/g, '')}`;
    await fakes.robot(token, { secret });
    const task = await createTask({
      receiver: { channels: { dinggroup: [{ webhook: token, secret }], email: [2], webhook: receiver.url } },
    });
    const marker = randomUUID();

    // Act
    const timestamp = await serviceNow();
    const res = await call('POST', '/alarm/report', {
      app: null,
      json: {
        taskid: task.id,
        timestamp,
        sign: hmacSign(task.token, task.id, timestamp),
        level: 3,
        ctn: { hostname: 'db-7', marker },
      },
    });
    expect(res.code).toBe(0);

    // Assert: the robot got a correctly signed markdown message.
    const [robot] = await fakes.waitFor(
      'robot call',
      async () => (await fakes.requests('dinggroup')).filter((r) => r.query.access_token === token),
      1,
      20_000,
    );
    expect(robot.signed).toBe(true);
    expect(robot.query.sign).toBe(
      createHmac('sha256', secret).update(`${robot.query.timestamp}\n${secret}`).digest('base64'),
    );
    expect(robot.json.msgtype).toBe('markdown');
    expect(robot.json.markdown.title).toBe(`[local] ${task.name}: alarm (urgent)`);
    expect(robot.json.markdown.text).toContain(marker);

    // ... the e-mail reached the SMTP server.
    const [mail] = await fakes.waitFor(
      'mail',
      async () => (await fakes.mails()).filter((m) => m.html.includes(marker)),
      1,
      20_000,
    );
    expect(mail.to).toEqual(['zhangsan@example.com']);
    expect(mail.subject).toBe(`[local] ${task.name}: alarm (urgent)`);
    expect(mail.html).toContain('db-7');

    // ... the webhook got the ALARM event.
    await receiver.waitFor((all) =>
      all.some((r) => r.json?.event === 'ALARM' && r.json.data?.task?.id === task.id),
    );
    const event = receiver.received.find(
      (r) => r.json?.event === 'ALARM' && r.json.data?.task?.id === task.id,
    );
    expect(event?.json.data.history.ctn).toEqual({ hostname: 'db-7', marker });

    // ... and each delivery is recorded.
    const attempts = await until('notification attempts', async () => {
      const a = await recentNotificationAttempts(task.id, 20);
      return a.filter((x) => x.outcome === 'delivered').length >= 2 ? a : undefined;
    });
    // (Each job's delivery once: under the chaos queue a copy of a job may deliver it again.)
    expect(
      eachOnce(
        attempts.filter((a) => a.outcome === 'delivered'),
        (a) => a.job_id,
      )
        .map((a) => a.channel)
        .sort(),
    ).toEqual(['dinggroup', 'email']);
    expect(attempts.every((a) => a.scene === 'not_compress')).toBe(true);
    expect(JSON.stringify(attempts)).not.toContain(token);
    expect(JSON.stringify(attempts)).not.toContain(secret);
    const hooks = await until('webhook attempts', async () => {
      // the service clock may be days ahead of this process's clock (other suites move it)
      const a = await webhookAttemptsOfTask(task.id, 20, (await serviceNow()) * 1000 + 60_000);
      return a.some((x) => x.outcome === 'delivered') ? a : undefined;
    });
    expect(hooks.some((h) => h.outcome === 'delivered')).toBe(true);
  });
});
