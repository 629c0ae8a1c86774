/**
 * A circuit breaker per task, per container: one receiver that is down must hold up only its own
 * task's events, not the batches it shares with every other task. Each failed attempt that reached
 * the receiver (an answer other than 200, a timeout, the network) is noted; a delivery ends a run of
 * failures, and OPEN_MS without a failure forgets them.
 *
 * - A producer's first attempts (deliverNow) leave a task's events to the webhook queue while its
 *   receiver failed within OPEN_MS (failedLately): queuing costs the events nothing.
 * - The webhook consumer holds a task's events after CONSECUTIVE_FAILURES failures in a row (admit),
 *   which a receiver that is down reaches at once and a flaky one hardly ever: it sends one of them
 *   every PROBE_MS (the probe) and counts the others as failed attempts without sending them
 *   (`circuit open`), each retried after its backoff as any failure is; an event's last attempt, and
 *   its first after a redrive, are always sent. A receiver that stays down thus costs a batch no timeouts but one per event at its
 *   last attempt (an hour and more after its first), and its events still end in the dead-letter
 *   queue after their attempts, with the receiver's own answer as the last reason.
 *
 * Nothing is shared between containers: each learns the receiver's state from its own attempts.
 */
export const OPEN_MS = 30_000;
export const PROBE_MS = 5_000;
export const CONSECUTIVE_FAILURES = 5;

interface Circuit {
  /** Failed attempts in a row. */
  failures: number;
  lastFailure: number;
  /** When the next probe may go out (ms). */
  probeAt: number;
}

const circuits = new Map<number, Circuit>();

/** The task's circuit, forgotten OPEN_MS after its last failure. */
function circuitOf(taskId: number, now: number): Circuit | undefined {
  const c = circuits.get(taskId);
  if (c && c.lastFailure + OPEN_MS <= now) {
    circuits.delete(taskId);
    return undefined;
  }
  return c;
}

/**
 * What the webhook consumer may do with the task's next event now: `send` it (closed), send it as
 * the `probe` (open, and a probe is due: the next one is then due PROBE_MS later), or `hold` it (open:
 * CONSECUTIVE_FAILURES failures in a row, the last one within OPEN_MS).
 */
export function admit(taskId: number, now: number): 'send' | 'probe' | 'hold' {
  const c = circuitOf(taskId, now);
  if (!c || c.failures < CONSECUTIVE_FAILURES) return 'send';
  if (c.probeAt <= now) {
    c.probeAt = now + PROBE_MS;
    return 'probe';
  }
  return 'hold';
}

/** Whether the task's receiver failed an attempt within OPEN_MS (a producer then queues its events). */
export const failedLately = (taskId: number, now: number): boolean => circuitOf(taskId, now) !== undefined;

/** Notes an attempt's outcome: delivered, or failed at the receiver (`reached`), or neither. */
export function noteAttempt(
  taskId: number,
  outcome: { delivered: boolean; reached: boolean },
  now: number,
): void {
  const c = circuitOf(taskId, now);
  if (outcome.delivered) {
    if (c) c.failures = 0;
    return;
  }
  if (!outcome.reached) return;
  circuits.set(taskId, {
    failures: (c?.failures ?? 0) + 1,
    lastFailure: now,
    probeAt: c ? Math.max(c.probeAt, now + PROBE_MS) : now + PROBE_MS,
  });
}

/** Tests: every circuit closed. */
export function resetCircuits(): void {
  circuits.clear();
}
