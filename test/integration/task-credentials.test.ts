import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hmacSign } from '../../shared/domain/auth/signature.ts';
import { verifyWebhookSignature } from '../../shared/domain/webhooks/signature.ts';
import { advanceClock, api, call, serviceNow, taskAuth } from '../support/client.ts';
import { TestReceiver } from '../support/receiver.ts';
import { type CreatedTask, createTask } from '../support/tasks.ts';

/**
 * Rotating a task's token and secret (PUT /alarmtask/credentials, API guide §5.12): new ones at
 * once, the old ones valid for the stated overlap on every door, webhooks signed with both secrets
 * meanwhile, and nothing of the old ones after it.
 */
const receiver = new TestReceiver();

beforeAll(async () => {
  await receiver.start();
});
afterAll(() => receiver.stop());

/** An alarm report signed with `token` (HMAC-SHA256). */
async function report(t: CreatedTask, token: string, ctn: Record<string, unknown>) {
  const ts = await serviceNow();
  return call('POST', '/alarm/report', {
    app: null,
    json: { taskid: t.id, timestamp: ts, sign: hmacSign(token, t.id, ts), ctn, level: 1 },
  });
}

const show = async (t: CreatedTask, secret: string) =>
  api.get('/alarmtask/show', { query: await taskAuth({ id: t.id, secret }) });

describe('PUT /alarmtask/credentials', () => {
  it('makes a new token and secret that work at once, and keeps the old ones for the overlap', async () => {
    // Arrange
    const t = await createTask({ receiver: { channels: { email: [1], webhook: receiver.url } } });
    expect((await report(t, t.token, { warm: 'cache' })).code).toBe(0);
    // Act
    const rotated = await api.put('/alarmtask/credentials', {
      ...(await taskAuth(t)),
      token: 1,
      secret: 1,
      overlap_minutes: 2,
    });
    const { token, secret, previous_valid_until } = rotated.data as Record<string, string & number>;
    // Assert: new ones at once (the door that cached the task reads it again), old ones still
    expect(rotated.code).toBe(0);
    expect(token).toMatch(/^[0-9a-f]{40}$/);
    expect(secret).toMatch(/^[0-9a-f]{40}$/);
    expect([token, secret]).not.toContain(t.token);
    expect(previous_valid_until - (await serviceNow())).toBeGreaterThan(100);
    expect((await report(t, token, { by: 'new token' })).code).toBe(0);
    expect((await report(t, t.token, { by: 'old token' })).code).toBe(0);
    expect((await show(t, secret)).data.task.id).toBe(t.id);
    expect((await show(t, t.secret)).code).toBe(0);
    // Webhook events carry a signature with each secret meanwhile.
    const [event] = await receiver
      .waitFor((all) => all.some((r) => r.json?.data?.history?.ctn?.by === 'new token'))
      .then((all) => all.filter((r) => r.json?.data?.history?.ctn?.by === 'new token'));
    const header = String(event.headers['webhook-signature']);
    const id = String(event.headers['webhook-id']);
    const stamp = String(event.headers['webhook-timestamp']);
    expect(header.split(' ')).toHaveLength(2);
    expect(verifyWebhookSignature(secret, id, stamp, event.body, header)).toBe(true);
    expect(verifyWebhookSignature(t.secret, id, stamp, event.body, header)).toBe(true);
    // Act: the overlap passes
    await advanceClock(125);
    // Assert: only the new ones
    // (the alarm door answers refusals with HTTP 200, the code in the envelope: API guide §2.2)
    expect(await report(t, t.token, { by: 'old token, late' })).toMatchObject({
      code: 401,
      msg: 'signature invalid',
    });
    expect(await show(t, t.secret)).toMatchObject({ status: 401, msg: 'signature invalid' });
    expect((await report(t, token, { by: 'new token, later' })).code).toBe(0);
  });

  it('ends the old secret at once with an overlap of 0, and leaves the token as it is', async () => {
    const t = await createTask();
    const rotated = await api.put('/alarmtask/credentials', {
      ...(await taskAuth(t)),
      secret: 1,
      overlap_minutes: 0,
    });
    expect(rotated.data).toEqual({
      id: t.id,
      secret: expect.any(String),
      previous_valid_until: expect.any(Number),
    });
    expect(await show(t, t.secret)).toMatchObject({ status: 401, msg: 'signature invalid' });
    expect((await show(t, rotated.data.secret as string)).code).toBe(0);
    expect((await report(t, t.token, { token: 'kept' })).code).toBe(0);
  });

  it('refuses a request that names nothing to rotate, or an overlap past a week, changing nothing', async () => {
    const t = await createTask();
    const none = await api.put('/alarmtask/credentials', { ...(await taskAuth(t)) });
    const long = await api.put('/alarmtask/credentials', {
      ...(await taskAuth(t)),
      token: 1,
      overlap_minutes: 10_081,
    });
    expect([none.status, none.data.errors]).toEqual([
      422,
      [{ field: 'token', message: 'name the credentials to rotate: token, secret or both' }],
    ]);
    expect([long.status, long.msg]).toEqual([422, 'overlap_minutes must be 0 to 10080 minutes']);
    expect((await show(t, t.secret)).code).toBe(0);
  });
});
