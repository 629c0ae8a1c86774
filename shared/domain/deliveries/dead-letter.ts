/**
 * One dead letter as the operators' listing shows it (API guide §14): what its message carries, read
 * from its body without its secrets (robots, receivers, content), and why its deliveries failed, from
 * its attempt records. The listing and the redrive are dlq.ts.
 */
import { isObject, parseJson } from '../../json.ts';
import type { QueueName } from '../../contracts/messages.ts';

/** What a dead letter carries, from its body. */
export type Carried =
  | { kind: 'webhook'; task_id: number; event_id: string; event?: string; type?: string }
  | { kind: 'webhooks'; task_id: number; events: { event_id: string; event?: string; type?: string }[] }
  | {
      kind: 'notify';
      task_id: number;
      job_id: string;
      scene: string;
      channel: string;
      users?: number;
      robots?: number;
    }
  | {
      kind: 'alarm';
      task_id: number;
      uuid: string;
      level?: number;
      notice_time?: number;
      reported_at?: number;
    }
  | { kind: 'malformed'; task_id?: number };

const str = (v: unknown) => (typeof v === 'string' ? v : undefined);
const int = (v: unknown) => (Number.isSafeInteger(v) ? (v as number) : undefined);

function eventOf(e: unknown): { event_id: string; event?: string; type?: string } | undefined {
  if (!isObject(e) || typeof e.event_id !== 'string' || e.event_id === '') return undefined;
  const body = isObject(e.body) ? e.body : {};
  return {
    event_id: e.event_id,
    ...(str(body.event) ? { event: str(body.event) } : {}),
    ...(str(body.type) ? { type: str(body.type) } : {}),
  };
}

/** Parses a dead letter's body (shared/contracts/messages.ts); secrets (robots, receivers, content) are left out. */
export function carriedBy(queue: QueueName, body: string): Carried {
  let m: unknown;
  try {
    m = parseJson(body);
  } catch {
    return { kind: 'malformed' };
  }
  if (!isObject(m)) return { kind: 'malformed' };
  const task_id = int(m.task_id);
  const malformed: Carried = task_id === undefined ? { kind: 'malformed' } : { kind: 'malformed', task_id };
  if (task_id === undefined) return malformed;
  if (queue === 'webhook') {
    if (m.kind === 'webhooks' && Array.isArray(m.events)) {
      const events = m.events.map(eventOf);
      if (events.length === 0 || events.some((e) => !e)) return malformed;
      return { kind: 'webhooks', task_id, events: events as { event_id: string }[] };
    }
    const e = eventOf(m);
    return e ? { kind: 'webhook', task_id, ...e } : malformed;
  }
  if (queue === 'notify') {
    if (m.kind !== 'notify' || !str(m.job_id) || !str(m.scene) || !str(m.channel)) return malformed;
    return {
      kind: 'notify',
      task_id,
      job_id: m.job_id as string,
      scene: m.scene as string,
      channel: m.channel as string,
      ...(Array.isArray(m.users) ? { users: m.users.length } : {}),
      ...(Array.isArray(m.robots) ? { robots: m.robots.length } : {}),
    };
  }
  if (m.kind !== 'alarm' || !str(m.uuid)) return malformed;
  return {
    kind: 'alarm',
    task_id,
    uuid: m.uuid as string,
    ...(int(m.level) !== undefined ? { level: int(m.level) } : {}),
    ...(int(m.notice_time) !== undefined ? { notice_time: int(m.notice_time) } : {}),
    ...(int(m.reported_at) !== undefined ? { reported_at: int(m.reported_at) } : {}),
  };
}

/** The last attempt that did not deliver, as a dead letter's reason. */
export interface Reason {
  outcome: string;
  attempt: number;
  /** HTTP status (webhooks). */
  status?: number;
  /** Provider or reason code (notifications). */
  code?: string;
  error?: string;
  /** Masked as recorded. */
  target?: string;
  /** Unset for a malformed message (no attempt was made). */
  at?: number;
}

export interface Failures {
  attempts: number;
  first_failure_at?: number;
  last_failure_at?: number;
  reason?: Reason;
}

/** An attempt record of a webhook event or a notification job, as far as a reason reads it. */
export interface AnyAttempt {
  outcome: string;
  attempt: number;
  at: number;
  at_ms: number;
  status?: number;
  code?: string;
  error?: string;
  detail?: string;
  target?: string;
}

/** Attempt counts, first and last failure and the last failure's reason, from attempt records. */
export function failuresOf(attempts: AnyAttempt[]): Failures {
  const failed = attempts.filter((a) => a.outcome !== 'delivered').sort((a, b) => a.at_ms - b.at_ms);
  const last = failed[failed.length - 1];
  const error = last?.error ?? last?.detail;
  return {
    // Attempts made, not records: a notification's run records one per target, and a message the
    // queue delivered twice may have recorded its attempt twice.
    attempts: new Set(attempts.map((a) => a.attempt)).size,
    ...(failed.length > 0 ? { first_failure_at: failed[0].at, last_failure_at: last.at } : {}),
    ...(last
      ? {
          reason: {
            outcome: last.outcome,
            attempt: last.attempt,
            ...(last.status !== undefined ? { status: last.status } : {}),
            ...(last.code !== undefined ? { code: last.code } : {}),
            ...(error ? { error } : {}),
            ...(last.target ? { target: last.target } : {}),
            at: last.at,
          },
        }
      : {}),
  };
}
