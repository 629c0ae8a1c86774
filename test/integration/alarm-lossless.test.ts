import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hmacSign } from '../../shared/domain/auth/signature.ts';
import { parseJson } from '../../shared/json.ts';
import { api, baseUrl, serviceNow } from '../support/client.ts';
import { TestReceiver } from '../support/receiver.ts';
import { type CreatedTask, createTask, uniqueTaskName } from '../support/tasks.ts';

/**
 * API guide §7.3: what /alarm/report accepts travels through the queue, the pipeline, the table and the
 * webhook unchanged. Every case here was once answered with code 0 and then lost (the pipeline failed
 * on every retry) or answered with a 500.
 */

/** Sends the body text exactly as written (JSON.stringify would already lose digits). */
async function reportText(t: CreatedTask, ctnText: string, extra = '') {
  const timestamp = await serviceNow();
  const sign = hmacSign(t.token, t.id, timestamp);
  const body = `{"taskid":${t.id},"timestamp":${timestamp},"sign":"${sign}","ctn":${ctnText}${extra}}`;
  const res = await fetch(`${baseUrl()}/alarm/report`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  return {
    status: res.status,
    ...((await res.json()) as { code: number; msg: string; data: { uuid?: string } }),
  };
}

/** The value as text with every number exactly as written (the comparison form). */
const canonical = (text: string) => JSON.stringify(parseJson(text));

function nest(open: string, close: string, depth: number, leaf: string): string {
  return open.repeat(depth) + leaf + close.repeat(depth);
}

const CASES: [string, string][] = [
  ['a 20-digit trace id', '{"trace_id":12345678901234567890}'],
  ['2^53 + 2', '{"n":9007199254740994}'],
  ['1e21', '{"n":1e21}'],
  ['-1e20', '{"n":-1e20}'],
  ['1e308', '{"n":1e308}'],
  ['1e-200', '{"n":1e-200}'],
  ['1.0 and 1.50 as written', '{"a":1.0,"b":1.50,"c":-0}'],
  ['33 nested objects', `{"deep":${nest('{"a":', '}', 32, '1')}}`],
  ['40 nested arrays', `{"deep":${nest('[', ']', 40, '1')}}`],
  ['64 levels, the limit', nest('{"a":', '}', 63, '{"leaf":true}')],
  ['an empty key', '{"":1}'],
  [
    'keys constructor and __proto__',
    '{"constructor":{"name":"x"},"__proto__":{"polluted":true},"prototype":1}',
  ],
  ['U+FFFE and U+FFFF', '{"s":"a\\ufffe b\\uffff c","\\uffff":"key"}'],
  ['emoji and CJK', '{"host":"web-1 🚨","msg":"磁盘已满 🔥","flag":"🇨🇳"}'],
  ['a lone surrogate escape', '{"s":"\\ud800x"}'],
];

describe('alarm content travels unchanged (API guide §7.3)', () => {
  const hook = new TestReceiver();
  let stored: CreatedTask;
  let unstored: CreatedTask;

  beforeAll(async () => {
    await hook.start();
    const receiver = { channels: { email: [1], webhook: `${hook.url}/hook` } };
    stored = await createTask({
      receiver,
      workflow: { enable: true, reminds: [] },
      compress: { enable: true, method: 3, strategy: 1, strategy_cycle: 10 },
    });
    unstored = await createTask({ receiver, flag_save_db: 0 });
  });
  afterAll(() => hook.stop());

  it.each(CASES)('%s reaches the webhook as written, stored and not stored', async (_name, ctnText) => {
    // Act
    const a = await reportText(stored, ctnText);
    const b = await reportText(unstored, ctnText);
    // Assert: accepted, then delivered with the same content
    expect(a).toMatchObject({ status: 200, code: 0 });
    expect(b).toMatchObject({ status: 200, code: 0 });
    const got = await hook.waitFor(
      (all) =>
        all.some((r) => r.json?.data?.history?.uuid === a.data.uuid) &&
        all.some((r) => r.json?.data?.msg?.uuid === b.data.uuid),
      20_000,
    );
    const storedEvent = got.find((r) => r.json?.data?.history?.uuid === a.data.uuid);
    const unstoredEvent = got.find((r) => r.json?.data?.msg?.uuid === b.data.uuid);
    const ctnOf = (body: string, field: 'history' | 'msg') =>
      JSON.stringify((parseJson(body) as { data: Record<string, { ctn: unknown }> }).data[field].ctn);
    expect(ctnOf(storedEvent?.body ?? '', 'history')).toBe(canonical(ctnText));
    expect(ctnOf(unstoredEvent?.body ?? '', 'msg')).toBe(canonical(ctnText));
  });

  it('keeps the digits in the webhook body itself and in the stored workflow', async () => {
    // Act
    const res = await reportText(stored, '{"trace_id":12345678901234567890,"ratio":1e21}');
    const got = await hook.waitFor((all) =>
      all.some((r) => r.json?.type === 'generated' && r.json?.data?.history?.uuid === res.data.uuid),
    );
    const generated = got.find(
      (r) => r.json?.type === 'generated' && r.json?.data?.history?.uuid === res.data.uuid,
    );
    const workflowId = generated?.json.data.workflow.id as number;
    const show = await api.get('/workflow/show', { query: { id: workflowId } });
    // Assert
    expect(generated?.body).toContain('"ctn":{"trace_id":12345678901234567890,"ratio":1e21}');
    expect(show.data.workflow.history.ctn).toBe('{"trace_id":12345678901234567890,"ratio":1e21}');
  });

  it('refuses content nested deeper than 64 levels with 4000, and 10,000 levels without a 500', async () => {
    // Act
    const over = await reportText(stored, nest('{"a":', '}', 64, '{"leaf":true}'));
    const absurd = await reportText(stored, `{"deep":${nest('[', ']', 10_000, '1')}}`);
    // Assert
    expect(over).toMatchObject({
      status: 200,
      code: 4000,
      msg: 'ctn must not be nested deeper than 64 levels',
    });
    expect(absurd).toMatchObject({
      status: 200,
      code: 4000,
      msg: 'ctn must not be nested deeper than 64 levels',
    });
  });

  it('carries alarms of tasks whose name holds U+FFFE, U+FFFF and emoji', async () => {
    // Arrange
    const name = `${uniqueTaskName('odd')}-\ufffe\uffff-🚨`;
    const t = await createTask({ name, receiver: { channels: { webhook: `${hook.url}/odd` } } });
    // Act
    const res = await reportText(t, '{"a":"🚨"}');
    const got = await hook.waitFor((all) => all.some((r) => r.json?.data?.history?.uuid === res.data.uuid));
    // Assert
    const event = got.find((r) => r.json?.data?.history?.uuid === res.data.uuid);
    expect(event?.json.data.task.name).toBe(name);
    expect(event?.json.data.history.ctn).toEqual({ a: '🚨' });
  });
});
