import { describe, expect, it } from 'vitest';
import type { AlarmLogEntry } from '../alarms/log.ts';
import { type DeliverySummary, summarizeDeliveries } from '../deliveries/trace.ts';
import { summaryOf, uidsShown } from './alarm-trace.ts';

/** The trace's headline: what reached a person, not only what the pipeline decided. */
describe('summaryOf', () => {
  const entry = (e: Partial<AlarmLogEntry>) =>
    ({ decision: 'compress_disable', notify: 'none', ...e }) as AlarmLogEntry;
  const mail = (outcome: string, code = '', detail?: string) => ({
    job_id: 'j',
    scene: 'not_compress',
    channel: 'email',
    status: 'skipped',
    targets: [],
    attempts: [{ target: 'uid 1', outcome, code, detail, at_ms: 1, seq: 0 }],
  });
  const hook = (outcome: string, status?: number) => ({
    event_id: 'e',
    event: 'ALARM',
    type: 'compress_disable',
    attempts: [{ attempt: 1, outcome, at_ms: 1, ...(status ? { status } : {}) }],
  });
  const deliveries = (notifications: object[], webhooks: object[] = []): DeliverySummary =>
    summarizeDeliveries({ notifications, webhooks } as Parameters<typeof summarizeDeliveries>[0]);

  it.each([
    [
      'the e-mail skipped and the webhook delivered: nobody reached',
      entry({}),
      deliveries([mail('skipped', 'not_configured', 'not configured')], [hook('delivered', 200)]),
      'nobody reached: email skipped (not configured), webhook delivered',
    ],
    [
      'the e-mail failed',
      entry({}),
      deliveries([mail('failed', '550', 'mailbox unavailable')]),
      'nobody reached: email failed (mailbox unavailable)',
    ],
    [
      'the e-mail delivered',
      entry({}),
      deliveries([mail('delivered', '250')], [hook('failed', 503)]),
      'notified: email delivered, webhook failed (HTTP 503)',
    ],
    [
      'a compressed alarm whose e-mail waits its turn',
      entry({ decision: 'compressed', notify: 'now', k: 1, batch: 12 }),
      deliveries([{ ...mail('delivered'), attempts: [], status: 'pending' }]),
      'the 1st alarm of batch 12, not notified yet: email pending',
    ],
    [
      'a recovery nobody was told of',
      entry({ decision: 'recovery' }),
      deliveries([]),
      'a recovery (open workflows of its metric finished), nobody reached: no delivery recorded',
    ],
    [
      "a delayed window's first alarm, once sent",
      entry({ decision: 'compressed', notify: 'deferred', k: 1, batch: 3 }),
      deliveries([mail('delivered')]),
      'the 1st alarm of batch 3 (sent when its window ended), notified: email delivered',
    ],
    [
      "a delayed window's first alarm, before its window ends",
      entry({ decision: 'compressed', notify: 'deferred', k: 1, batch: 3 }),
      deliveries([]),
      'the first alarm of batch 3: sent to its receivers once its window ends',
    ],
    [
      'a filtered alarm',
      entry({ decision: 'drop' }),
      deliveries([]),
      'dropped by the filter (not stored, nobody notified)',
    ],
  ])('%s', (_, e, delivery, text) => {
    expect(summaryOf(e, delivery)).toBe(text);
  });
});

describe('uidsShown', () => {
  it("collects the uids of the receivers' people and of the notifications' targets, once each, in order", () => {
    const receivers = {
      text: '',
      sets: [],
      people: { email: [3, 1], webhook: 'http://127.0.0.1:4000/' },
      override: { sms: [7] },
    } as unknown as Parameters<typeof uidsShown>[0];
    const jobs = [
      { targets: ['uid 1 a***@example.com', 'uids 2,5'] },
      { targets: ['abcd***wxyz', 'none'] },
    ] as unknown as Parameters<typeof uidsShown>[1];
    expect(uidsShown(receivers, jobs)).toEqual([1, 2, 3, 5, 7]);
    expect(uidsShown(undefined, [])).toEqual([]);
  });
});
