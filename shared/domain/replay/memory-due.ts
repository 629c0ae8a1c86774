import type { DueItem } from '../due/repository.ts';
import type { DueHandler } from '../due/runner.ts';

/**
 * The due work of a replay, in memory, on a virtual clock: what the scheduled function would find in
 * the `DUE#` partitions, run by the production handlers of each kind at the item's due time (the
 * scheduler of a replay is punctual: an item runs at its `due_at`, before any alarm of that second).
 * A handler's answer is applied as the scheduled runner applies it: done, or moved to `reschedule`.
 */
export class VirtualClock {
  constructor(public now: number) {}
}

const keyOf = (d: Pick<DueItem, 'kind' | 'ref' | 'due_at'>) => `${d.due_at}\u0000${d.kind}\u0000${d.ref}`;

export interface DueRun {
  /** Items run (each handler call). */
  ran: number;
  /** Items whose handler threw (dropped: a replay retries nothing). */
  failed: { kind: string; ref: string; error: string }[];
}

export class VirtualDue {
  private readonly items = new Map<string, DueItem>();
  readonly runs: DueRun = { ran: 0, failed: [] };

  put(d: DueItem): void {
    this.items.set(keyOf(d), { ...d, payload: structuredClone(d.payload) });
  }

  delete(d: Pick<DueItem, 'kind' | 'ref' | 'due_at'>): void {
    this.items.delete(keyOf(d));
  }

  /** The items waiting, soonest first (kind and ref break ties, so the order is the same every run). */
  pending(): DueItem[] {
    return [...this.items.values()].sort(
      (a, b) => a.due_at - b.due_at || (a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : a.ref < b.ref ? -1 : 1),
    );
  }

  /** A copy of this queue (a forked replay world goes on from the same due work). */
  clone(): VirtualDue {
    const copy = new VirtualDue();
    for (const d of this.items.values()) copy.put(d);
    return copy;
  }

  /**
   * Runs every item due by `until` (and, in `drain`, of the kinds named there, whatever their time) in
   * due order, each with the clock at its due time. `before` is told which item runs next (a replay
   * attributes what the item sends). Stops after `limit` runs: a cycle reminder re-arms for ever.
   */
  async runUntil(
    until: number,
    handlers: Record<string, DueHandler>,
    clock: VirtualClock,
    opts: { drain?: ReadonlySet<string>; limit?: number; before?: (item: DueItem) => void } = {},
  ): Promise<void> {
    const limit = opts.limit ?? Number.POSITIVE_INFINITY;
    for (;;) {
      const next = this.pending().find(
        (d) => handlers[d.kind] && (d.due_at <= until || opts.drain?.has(d.kind)),
      );
      if (!next || this.runs.ran >= limit) return;
      this.items.delete(keyOf(next));
      clock.now = Math.max(clock.now, next.due_at);
      opts.before?.(next);
      this.runs.ran++;
      try {
        const result = await handlers[next.kind](next, clock.now);
        // As the scheduled runner: a new time re-puts the item; the same time frees it for the next
        // run (a minute later on the schedule).
        if (result) {
          const at = result.reschedule === next.due_at ? next.due_at + 60 : result.reschedule;
          this.put({ ...next, due_at: at, payload: result.payload ?? next.payload, attempts: 0 });
        }
      } catch (err) {
        this.runs.failed.push({
          kind: next.kind,
          ref: next.ref,
          error: (err as Error).message ?? String(err),
        });
      }
    }
  }
}
