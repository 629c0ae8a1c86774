import { describe, expect, it } from 'vitest';
import { loggable, notifyLogItems, runsOfLogItem } from './log.ts';
import type { AttemptRecord, JobRun } from './repository.ts';

const attempt = (
  job: string,
  at: number,
  seq: number,
  extra: Partial<AttemptRecord> = {},
): AttemptRecord => ({
  job_id: job,
  task_id: 7,
  channel: 'email',
  scene: 'not_compress',
  target: `uid ${seq + 1} a***@example.com`,
  outcome: 'delivered',
  code: '250',
  attempt: 1,
  duration_ms: 12,
  at: Math.floor(at / 1000),
  at_ms: at,
  seq,
  ttl: 0,
  ...extra,
});

const run = (job: string, task: number, attempts: AttemptRecord[], extra: Partial<JobRun> = {}): JobRun => ({
  job_id: job,
  task_id: task,
  channel: 'email',
  scene: 'not_compress',
  status: 'delivered',
  done: ['uid:1'],
  attempts: attempts.map((a) => ({ ...a, task_id: task })),
  message: { format: 3, title: 'T', text: '<p>x</p>' },
  attempt: 1,
  at_ms: 1_700_000_000_500,
  ...extra,
});

describe('the notification log', () => {
  it('keeps a batch as one item per task, and reads back each run with its attempts and message', () => {
    // Arrange: two jobs of task 7 (one with two attempts), one of task 8
    const runs = [
      run('7:u1:not_compress:email', 7, [attempt('7:u1:not_compress:email', 1_700_000_000_100, 0)]),
      run('7:u2:not_compress:email', 7, [
        attempt('7:u2:not_compress:email', 1_700_000_000_200, 0),
        attempt('7:u2:not_compress:email', 1_700_000_000_300, 1, { outcome: 'skipped', code: 'no_email' }),
      ]),
      run('8:u3:not_compress:email', 8, [attempt('8:u3:not_compress:email', 1_700_000_000_400, 0)]),
    ];
    // Act
    const items = notifyLogItems(runs);
    // Assert
    expect(items.map((i) => [i.pk, i.entity, i.base_ms])).toEqual([
      ['NLOG#7#19675', 'notify_log', 1_700_000_000_100],
      ['NLOG#8#19675', 'notify_log', 1_700_000_000_400],
    ]);
    const read = runsOfLogItem(items[0]);
    expect(read.map((r) => [r.job_id, r.status, r.message?.title])).toEqual([
      ['7:u1:not_compress:email', 'delivered', 'T'],
      ['7:u2:not_compress:email', 'delivered', 'T'],
    ]);
    expect(read[1].attempts).toEqual(runs[1].attempts.map((a) => ({ ...a, ttl: items[0].ttl as number })));
  });

  it('takes only settled first runs of a reasonable size; the others keep their job item', () => {
    const one = run('j', 7, [attempt('j', 1, 0)]);
    expect(loggable(one, 1, false)).toBe(true);
    expect(loggable(one, 2, false)).toBe(false);
    expect(loggable(one, 1, true)).toBe(false);
    expect(loggable({ ...one, status: 'pending' }, 1, false)).toBe(false);
    const many = run(
      'j',
      7,
      Array.from({ length: 101 }, (_, i) => attempt('j', 1, i)),
    );
    expect(loggable(many, 1, false)).toBe(false);
  });
});
