import { createHash } from 'node:crypto';
import { perContainer } from '../../container.ts';
import { reserveHistoryIds } from './repository.ts';

/**
 * History ids: positive integers, unique, without a hot counter per alarm. Each container reserves
 * a block of BLOCK_SIZE ids from the `history` counter with one atomic ADD and hands them out from
 * memory, so the counter item takes one write per BLOCK_SIZE alarms per container. Ids increase
 * within a container; across containers they are unique but not ordered by time, and ids of a
 * block a container did not use up are skipped (gaps are allowed). A redelivered alarm keeps the id
 * recorded with it.
 */
export const BLOCK_SIZE = 100;

export class HistoryIdAllocator {
  private next = 0;
  private last = -1;
  private pending: Promise<void> | undefined;

  constructor(
    private readonly reserve: (size: number) => Promise<number> = reserveHistoryIds,
    private readonly size = BLOCK_SIZE,
  ) {}

  async nextId(): Promise<number> {
    while (this.next > this.last) {
      this.pending ??= this.reserve(this.size)
        .then((last) => {
          this.next = last - this.size + 1;
          this.last = last;
        })
        .finally(() => {
          this.pending = undefined;
        });
      await this.pending;
    }
    return this.next++;
  }
}

const allocatorOf = perContainer(() => new HistoryIdAllocator());

export const nextHistoryId = () => allocatorOf().nextId();

/** A UUID (version 8, RFC 9562) named by the task and a key: the same alert gives the same uuid. */
export function namedUuid(taskId: number, key: string): string {
  const h = createHash('sha256').update(`${taskId}\u0000${key}`).digest();
  h[6] = (h[6] & 0x0f) | 0x80;
  h[8] = (h[8] & 0x3f) | 0x80;
  const x = h.subarray(0, 16).toString('hex');
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
}
