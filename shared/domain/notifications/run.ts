import { nowMs } from '../../clock.ts';
import { count } from '../../metrics.ts';
import type { NotificationJob } from '../../contracts/messages.ts';
import type { StoredMessage } from './channel-message.ts';
import type { SendOutcome } from './providers/types.ts';
import { ATTEMPT_TTL_DAYS, type AttemptRecord, type JobStatus } from './repository.ts';

/** The attempts of one delivery run of a job and what they add up to. */
export class Run {
  readonly records: AttemptRecord[] = [];
  /** The rendered message as the channel sends it. */
  message?: StoredMessage;
  private pending = false;
  private delivered = false;
  private rejected = false;

  constructor(
    readonly job: NotificationJob,
    readonly attempt: number,
    readonly done: Set<string>,
  ) {}

  /** Records an attempt and, unless `settle` is false, counts its outcome for the target `key`. */
  record(key: string | undefined, target: string, r: SendOutcome, durationMs = 0, settle = true) {
    const atMs = nowMs();
    this.records.push({
      job_id: this.job.job_id,
      task_id: this.job.task_id,
      channel: this.job.channel,
      scene: this.job.scene,
      target,
      outcome: r.outcome,
      code: r.code,
      ...(r.detail ? { detail: r.detail } : {}),
      attempt: this.attempt,
      duration_ms: Math.round(durationMs),
      at: Math.floor(atMs / 1000),
      at_ms: atMs,
      seq: this.records.length,
      ttl: Math.floor(atMs / 1000) + ATTEMPT_TTL_DAYS * 86_400,
    });
    count('ChannelDelivery', { channel: this.job.channel, outcome: r.outcome });
    if (settle) this.settle(key, r.outcome);
  }

  /** Counts a target's outcome: final ones mark it served, the others leave the job pending. */
  settle(key: string | undefined, outcome: SendOutcome['outcome']) {
    if (outcome === 'delivered') this.delivered = true;
    if (outcome === 'rejected') this.rejected = true;
    const final = outcome === 'delivered' || outcome === 'rejected' || outcome === 'skipped';
    if (key && final) this.done.add(key);
    if (!final) this.pending = true;
  }

  status(): JobStatus {
    if (this.pending) return 'pending';
    if (this.delivered) return 'delivered';
    return this.rejected ? 'rejected' : 'skipped';
  }
}
