import { logger } from '../../log.ts';
import type { AlarmMessage } from '../../contracts/messages.ts';
import { count } from '../../metrics.ts';

/**
 * Contention on one metric (docs/pipeline.md, "Contention on one metric"). Every consumer batch
 * commits the alarms it holds of a metric in one transaction conditioned on the metric state's
 * version, so consumers working on the same metric at once race: one commits, the others re-read and
 * try again. Losing such a race is not a failure of the alarm and must never cost it a receive (the
 * alarm queue dead-letters a message after five): a group retries with jittered backoff within the
 * invocation's time, and when it keeps losing past its budget its alarms are handed back to the queue
 * as new messages (receive count zero) instead of being reported as failed.
 *
 * Only a race someone else won counts as contention: the state must have moved while the group was
 * trying. Commits refused while the state stayed where it was (something wrong with the table or
 * the item) are a real failure: the messages are reported failed and end in the dead-letter queue
 * after their receives, as any other failure does.
 */

/** Time kept for the side effects and a handback after the commits: never retried into it. */
export const EFFECTS_RESERVE_MS = 10_000;

/**
 * The serial lane of a metric (`METRIC#…`/`LANE`, a lease taken with a conditional put for the rest of
 * the invocation): one consumer at a time retries against a contended metric. A group whose commit
 * lost takes the lane and retries within its budget; a group that finds the lane held by another
 * consumer yields after a short grace (its alarms are handed back) instead of retrying against it for
 * its whole budget. An alarm
 * handed back MAX_HAND_BACKS times takes the lane before anything else and, holding it, retries for as
 * long as the invocation allows: hand-backs are bounded, and a hot metric costs one consumer's
 * retries, not every consumer's.
 */
export const MAX_HAND_BACKS = 3;
/** How long a lane group retries when the invocation's remaining time is not known (ms). */
export const LANE_BUDGET_MS = 20_000;

/** Whether a group's alarms go through the serial lane (one of them was handed back MAX_HAND_BACKS times). */
export const needsLane = (alarms: AlarmMessage[]): boolean =>
  alarms.some((a) => (a.handed_back ?? 0) >= MAX_HAND_BACKS);

/** Backoff between two commit attempts of a group, ms: exponential from 10 ms, capped, jittered. */
export function commitBackoffMs(attempt: number, random: () => number = Math.random): number {
  return Math.min(400, 10 * 2 ** Math.min(attempt, 10)) * (0.5 + random());
}

/**
 * Until when (on the `clockMs` clock) the groups of a batch that started at `startedMs` retry a lost
 * commit: the configured contention budget, but never into the last EFFECTS_RESERVE_MS of the
 * invocation (`remainingMs`, when known).
 */
export function commitDeadline(startedMs: number, budgetMs: number, remainingMs?: number): number {
  const byInvocation = remainingMs === undefined ? budgetMs : remainingMs - EFFECTS_RESERVE_MS;
  return startedMs + Math.max(0, Math.min(budgetMs, byInvocation));
}

/** A metric group that kept losing its commit to other consumers until its deadline. */
export class MetricContended extends Error {
  override readonly name = 'MetricContended';
  constructor(
    readonly metric: string,
    readonly attempts: number,
  ) {
    super(`metric ${metric}: still contended after ${attempts} commit attempts; handed back`);
  }
}

/**
 * Follows the versions a group's commit attempts read: `moved` once the state was seen at a version
 * other than the first one read (someone else committed: contention, not a fault).
 */
export class VersionWatch {
  private first: number | undefined | null = null;
  moved = false;

  see(version: number | undefined): void {
    if (this.first === null) this.first = version;
    else if (version !== this.first) this.moved = true;
  }
}

/** Seconds a handed-back alarm waits before it is visible again: 1 to 5, jittered. */
export function handbackDelaySeconds(random: () => number = Math.random): number {
  return 1 + Math.floor(random() * 5);
}

/** The message an alarm is handed back as: the same alarm, its handbacks counted. */
export function handedBack(alarm: AlarmMessage): AlarmMessage {
  return { ...alarm, handed_back: (alarm.handed_back ?? 0) + 1 };
}

/**
 * Hands the alarms of contended metric groups back to the queue (`send`); returns the ids of the
 * messages to report failed instead, when the handback could not be queued (they then count a
 * receive, as any failure does, and nothing is lost). A message is acknowledged only once its alarm
 * is on the queue again.
 */
export async function handBackContended(
  groups: { ids: string[]; alarms?: AlarmMessage[] }[],
  send: (alarms: AlarmMessage[]) => Promise<void>,
): Promise<string[]> {
  const alarms = groups.flatMap((g) => g.alarms ?? []).map(handedBack);
  try {
    await send(alarms);
  } catch (err) {
    logger.error('could not hand contended alarms back to the queue; they will be retried', {
      uuids: alarms.map((a) => a.uuid),
      error: err as Error,
    });
    return groups.flatMap((g) => g.ids);
  }
  logger.warn('metric contended: alarms handed back to the queue', {
    uuids: alarms.map((a) => a.uuid),
    handedBack: Math.max(...alarms.map((a) => a.handed_back ?? 0)),
  });
  count('AlarmsHandedBack', {}, alarms.length);
  return [];
}
