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

const allocator = new HistoryIdAllocator();

export const nextHistoryId = () => allocator.nextId();
