import type { NotificationJob, WebhookBody, WebhookBundle } from '../../contracts/messages.ts';
import type { WebhookAttempt } from '../webhooks/repository.ts';

/**
 * The outbound side of a replay: every notification job and webhook event the production code
 * publishes lands here instead of on a queue, with the alarm it belongs to. Nothing is sent.
 *
 * Whose an effect is: a workflow's (ids `wf:<workflow id>:...`) belongs to the alarm that opened the
 * workflow; any other to the alarm (or the due work of the alarm) being run when it was published.
 */
export interface SentJob {
  uuid: string | undefined;
  job: NotificationJob;
}

export interface SentEvent {
  uuid: string | undefined;
  eventId: string;
  event: string;
  type: string;
}

export class Collector {
  /** The alarm whose processing (or due work) is running. */
  current: string | undefined;
  readonly jobs: SentJob[] = [];
  readonly events: SentEvent[] = [];

  /**
   * `workflowOwner(id)`: the uuid of the alarm that opened workflow `id`; `hasWebhook()`: whether the
   * task has a webhook URL (events of a task without one are never queued, so they are not counted).
   */
  constructor(
    private readonly workflowOwner: (workflowId: number) => string | undefined,
    private readonly hasWebhook: () => boolean,
  ) {}

  private ownerOf(id: string): string | undefined {
    const m = /^wf:(\d+):/.exec(id);
    return m ? (this.workflowOwner(Number(m[1])) ?? this.current) : this.current;
  }

  readonly publishJobs = async (jobs: NotificationJob[]): Promise<void> => {
    for (const job of jobs) this.jobs.push({ uuid: this.ownerOf(job.job_id), job });
  };

  readonly publishEvents = async (
    _taskId: number,
    events: { body: WebhookBody; eventId?: string }[],
  ): Promise<void> => {
    for (const e of events) this.addEvent(e.eventId ?? '', e.body);
  };

  /** The pipeline's batch of effects (the webhook's first attempts are not made: nothing is sent). */
  readonly sendEffects = async (
    messages: { webhook: WebhookBundle[]; notify: NotificationJob[] },
    _delivered: WebhookAttempt[],
  ): Promise<void> => {
    for (const bundle of messages.webhook) for (const m of bundle.events) this.addEvent(m.event_id, m.body);
    await this.publishJobs(messages.notify);
  };

  private addEvent(eventId: string, body: WebhookBody): void {
    if (!this.hasWebhook()) return;
    this.events.push({ uuid: this.ownerOf(eventId), eventId, event: body.event, type: body.type });
  }
}
