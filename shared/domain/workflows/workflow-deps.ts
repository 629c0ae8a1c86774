import { nowSeconds } from '../../clock.ts';
import type { NotificationJob } from '../../contracts/messages.ts';
import { publish } from '../../messaging/sqs.ts';
import { getAlarmGroups, getDepartment, getUsers } from '../directory/repository.ts';
import { deleteDue, putDue } from '../due/repository.ts';
import { publishWebhookEvents } from '../events/publish.ts';
import { getTask } from '../tasks/repository.ts';
import * as repo from './repository.ts';
import * as counts from './repository-counts.ts';

/**
 * The I/O of the workflows module (the table, the directory, the queues, the due work), injected so
 * that its use cases (service.ts, announce.ts, reminders.ts) can be tested without it.
 */
export const defaultDeps = {
  now: nowSeconds,
  repo,
  counts,
  getUsers,
  getTask,
  getDepartment,
  getAlarmGroups,
  publishWebhookEvents,
  publishJobs: (jobs: NotificationJob[]) =>
    publish(
      'notify',
      jobs.map((body) => ({ body })),
    ),
  putDue,
  deleteDue,
};
export type WorkflowDeps = typeof defaultDeps;
