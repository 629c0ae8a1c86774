import type { NotificationJob } from '../../contracts/messages.ts';
import type { User } from '../directory/model.ts';
import { ROBOT_CHANNELS } from '../../contracts/receivers.ts';
import type { AlarmResult } from '../alarms/log.ts';
import type { SentJob } from './collector.ts';
import type { Outcome } from './outcomes.ts';
import type { World } from './world.ts';

/**
 * What each run of a replay comes to: counts per outcome, the messages per channel and the webhook
 * events it would send, and per person the messages before (recorded) and after (edited). Pure.
 */
export interface ReplaySummary {
  alarms: number;
  notified: number;
  deferred: number;
  compressed: number;
  filtered: number;
  recovered: number;
  stored: number;
  /** Workflows opened. */
  workflows_opened: number;
  /** Upgrade strategies fired. */
  upgrades: number;
  /** Metrics recovered by delay recovery (null for the recorded run: alarm records do not keep them). */
  delay_recoveries: number | null;
  /** Workflow reminders fired. */
  reminders: number;
  /** Messages per channel: one per person on a person's channel, one per robot set on a robot channel. */
  messages: Record<string, number>;
  webhook_events: number;
}

const ROBOTS = new Set<string>(ROBOT_CHANNELS);

/** Messages a job stands for: one per person, or one for a robot set. */
export const messagesOf = (job: NotificationJob): number =>
  ROBOTS.has(job.channel) ? 1 : (job.users?.length ?? 0);

export function summarize(
  world: World,
  outcomes: Iterable<Outcome>,
  opts: { delayRecoveries: boolean },
): ReplaySummary {
  const s: ReplaySummary = {
    alarms: 0,
    notified: 0,
    deferred: 0,
    compressed: 0,
    filtered: 0,
    recovered: 0,
    stored: 0,
    workflows_opened: world.workflows.opened,
    upgrades: 0,
    delay_recoveries: opts.delayRecoveries ? world.delayRecovered.size : null,
    reminders: world.workflows.reminded,
    messages: {},
    webhook_events: world.collector.events.length,
  };
  for (const o of outcomes) {
    s.alarms++;
    s[o.result as AlarmResult]++;
    s.upgrades += o.upgrades.length;
  }
  for (const { job } of world.collector.jobs)
    s.messages[job.channel] = (s.messages[job.channel] ?? 0) + messagesOf(job);
  return s;
}

export interface PersonMessages {
  uid: number;
  username: string;
  /** Messages per channel the recorded decisions sent this person. */
  before: Record<string, number>;
  /** Messages per channel the edited configuration would send. */
  after: Record<string, number>;
}

/** Most people an answer lists (the ones whose messages change most first). */
export const MAX_PEOPLE = 500;

function perPerson(jobs: SentJob[]): Map<number, Record<string, number>> {
  const out = new Map<number, Record<string, number>>();
  for (const { job } of jobs) {
    for (const uid of job.users ?? []) {
      const m = out.get(uid) ?? {};
      m[job.channel] = (m[job.channel] ?? 0) + 1;
      out.set(uid, m);
    }
  }
  return out;
}

const total = (m: Record<string, number>) => Object.values(m).reduce((a, b) => a + b, 0);

/** Everyone a person's channel reaches in either run, the biggest change first, then by uid. */
export function peopleOf(before: World, after: World, users: Map<number, User>): PersonMessages[] {
  const b = perPerson(before.collector.jobs);
  const a = perPerson(after.collector.jobs);
  const uids = [...new Set([...b.keys(), ...a.keys()])];
  return uids
    .map((uid) => ({
      uid,
      username: users.get(uid)?.username ?? '',
      before: b.get(uid) ?? {},
      after: a.get(uid) ?? {},
    }))
    .sort(
      (x, y) =>
        Math.abs(total(y.after) - total(y.before)) - Math.abs(total(x.after) - total(x.before)) ||
        x.uid - y.uid,
    )
    .slice(0, MAX_PEOPLE);
}

/** The people the runs reach (to read their names). */
export function uidsOf(...worlds: World[]): number[] {
  return [...new Set(worlds.flatMap((w) => w.collector.jobs.flatMap(({ job }) => job.users ?? [])))];
}
