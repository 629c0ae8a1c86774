import { randomBytes, randomUUID } from 'node:crypto';
import { deflateRawSync } from 'node:zlib';
import { beforeAll, describe, expect, it } from 'vitest';
import { packLog, unpackLog } from '../../db/client.ts';
import { resetConfig } from '../../config/env.ts';
import { deliveryLogItems, type WebhookAttempt } from '../webhooks/repository.ts';
import { type AlarmLogEntry, alarmLogItems, batchLogItems, cursorFits } from './log.ts';

beforeAll(() => {
  process.env.TABLE_NAME = 'unit';
  resetConfig();
});

const entry = (uuid: string, taskId = 7): AlarmLogEntry => ({
  uuid,
  task_id: taskId,
  history_id: 1,
  created_at: 1_700_000_000,
  level: 1,
  reported_level: 1,
  decision: 'compress_disable',
  notify: 'now',
  upgrades: 0,
  stored: true,
  why: { task_version: 1 },
  expires_at: 1_800_000_000,
});

const attempt = (eventId: string, n = 1): WebhookAttempt => ({
  event_id: eventId,
  task_id: 7,
  attempt: n,
  event: 'ALARM',
  type: 'compress_disable',
  outcome: 'delivered',
  status: 200,
  duration_ms: 3,
  at_ms: 1_700_000_000_123,
  at: 1_700_000_000,
});

const keysOf = (items: Record<string, unknown>[]) => items.map((i) => `${i.pk} ${i.sk}`);

describe('batch log items (a retried write overwrites instead of adding copies)', () => {
  it('give the same keys to the same content, and other keys to other content', () => {
    const at = 1_700_000_000_500;
    const once = keysOf(alarmLogItems([entry('a'), entry('b'), entry('c', 8)], at));
    const again = keysOf(alarmLogItems([entry('a'), entry('b'), entry('c', 8)], at));
    expect(once).toHaveLength(2);
    expect(again).toEqual(once);
    expect(keysOf(alarmLogItems([entry('a'), entry('x')], at))[0]).not.toBe(once[0]);

    const sent = keysOf(deliveryLogItems([attempt('e1'), attempt('e2')]));
    expect(keysOf(deliveryLogItems([attempt('e1'), attempt('e2')]))).toEqual(sent);
    expect(keysOf(deliveryLogItems([attempt('e1'), attempt('e2', 2)]))).not.toEqual(sent);
  });
});

describe('batch log rows are stored compressed', () => {
  it('keep a batch of 25 alarms, and of their first attempts, each in an item under one write unit', () => {
    const uuids = Array.from({ length: 25 }, () => randomUUID());
    const [log] = alarmLogItems(
      uuids.map((u) => ({ ...entry(u), why: undefined })),
      1_700_000_000_500,
    );
    const [sent] = deliveryLogItems(uuids.map((u) => attempt(`7:${u}:ALARM`)));
    for (const item of [log, sent]) {
      expect(item.log).toBeUndefined();
      // The item's size as DynamoDB counts it: attribute names and values.
      const size = Object.entries(item).reduce(
        (n, [k, v]) => n + k.length + (v instanceof Uint8Array ? v.length : String(v).length),
        0,
      );
      expect(size).toBeLessThan(1024);
    }
    expect(unpackLog<unknown[]>(log).map((row) => row[0])).toEqual(uuids);
    expect(unpackLog<unknown[]>(sent).map((row) => row[0])).toEqual(uuids.map((u) => `7:${u}:ALARM`));
  });

  it('keep ten alarms of one task with their first attempts in one item, under one write unit', () => {
    const uuids = Array.from({ length: 10 }, () => randomUUID());
    const items = batchLogItems(
      uuids.map((u) => ({ ...entry(u), why: undefined })),
      uuids.map((u) => attempt(`7:${u}:ALARM`)),
      1_700_000_000_500,
    );
    expect(items).toHaveLength(1);
    const { deliveries, ...item } = items[0] as { deliveries: Record<string, unknown>; entity: string };
    expect(item.entity).toBe('alarm_log');
    expect(unpackLog<unknown[]>(deliveries).map((row) => row[0])).toEqual(uuids.map((u) => `7:${u}:ALARM`));
    const size = (o: Record<string, unknown>): number =>
      Object.entries(o).reduce(
        (n, [k, v]) =>
          n +
          k.length +
          (v instanceof Uint8Array
            ? v.length
            : typeof v === 'object'
              ? size(v as Record<string, unknown>)
              : String(v).length),
        0,
      );
    expect(size({ ...item, deliveries })).toBeLessThan(1024);
  });

  it('read back rows stored as JSON text (items written before)', () => {
    expect(unpackLog({ log: '[["a",1]]' })).toEqual([['a', 1]]);
  });

  it('read back rows compressed with a larger window (items written before, with zlib defaults)', () => {
    // A random 6 KB text twice: its second copy can only be a reference more than 4 KB back.
    const blob = randomBytes(3000).toString('hex');
    const rows = [[blob, 1], ...Array.from({ length: 40 }, (_, i) => [randomUUID(), i]), [blob, 2]];
    const before = deflateRawSync(JSON.stringify(rows));
    // (the copy was a reference: a third of the text; with a 4 KB window it would be half)
    expect(before.length).toBeLessThan(JSON.stringify(rows).length / 3);
    expect(unpackLog({ logz: new Uint8Array(before) })).toEqual(rows);
    expect(unpackLog(packLog(rows))).toEqual(rows);
  });
});

describe('alarm log cursors', () => {
  // A window of one day and a log item written in it (the keys the log writes).
  const window = { from: 1_700_000_000, to: 1_700_086_400 };
  const atMs = 1_700_050_000_123;
  const { sk } = alarmLogItems([entry(randomUUID())], atMs)[0] as { sk: string };
  const day = Math.floor(atMs / 86_400_000);

  it.each([
    ['a position the log returned', true, { day, sk, taken: 3 }],
    ['a day other than its item time', false, { day: day - 1, sk, taken: 3 }],
    ['a sort key that is no log key ("0")', false, { day, sk: '0', taken: 0 }],
    ['a sort key before the window', false, { day: 19_675, sk: '1699920000000#0123456789ab', taken: 0 }],
    ['a sort key after the window', false, { day: 19_677, sk: '1700190000000#0123456789ab', taken: 0 }],
    ['a negative count', false, { day, sk, taken: -1 }],
    ['a huge count', false, { day, sk, taken: 2 ** 53 }],
    ['a fractional count', false, { day, sk, taken: 1.5 }],
    ['a sort key with a lone surrogate', false, { day, sk: `${sk.slice(0, 14)}\ud800`, taken: 0 }],
  ])('%s fits the window: %s', (_label, fits, cursor) => {
    expect(cursorFits(window, cursor)).toBe(fits);
  });
});
