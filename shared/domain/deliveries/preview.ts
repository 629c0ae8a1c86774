import { nowSeconds } from '../../clock.ts';
import { config } from '../../config/env.ts';
import type { NotifyScene, RenderContext } from '../../contracts/messages.ts';
import type { HistoryRecord } from '../alarms/history.ts';
import type { AlarmRecord } from '../alarms/model.ts';
import { taskContext } from '../alarms/notify.ts';
import { getAlarmRecord } from '../alarms/repository.ts';
import type { Person, Template } from '../directory/model.ts';
import { getTemplate } from '../directory/repository.ts';
import { NotFoundError } from '../errors.ts';
import { channelMessage } from '../notifications/channel-message.ts';
import { scenesClaimLink, shownClaimUrl } from '../notifications/claim-links.ts';
import { buildRenderValues, renderMessage } from '../notifications/render.ts';
import { type NotifyChannel, resolveTemplate } from '../tasks/templates.ts';
import type { TemplatePreview } from './responses.ts';
import { taskForUser } from '../tasks/access.ts';
import type { Task } from '../tasks/model.ts';
import { historyRef, pipelineRef, taskRef, workflowRef } from '../events/payloads.ts';

/**
 * The template preview (`POST /alarmtask/template/preview`): a task's template for one scene and
 * channel, rendered with a sample alarm or a stored one, and cut as that channel sends it.
 */
export const TEMPLATE_SOURCES = ['default', 'predefined', 'custom'] as const;

/** The sample alarm of a preview: a plausible error alarm, noticed now. */
export function sampleHistory(taskId: number, now: number, compressed: boolean): HistoryRecord {
  return {
    id: 0,
    uuid: '00000000-0000-4000-8000-000000000000',
    task_id: taskId,
    batch: compressed ? 1 : 0,
    metric: compressed ? '0000000000000000000000000000000000000000' : '',
    level: 2,
    ctn: { hostname: 'web-1', service: 'checkout', message: 'sample alarm: error rate 12% over 5 minutes' },
    notice_time: now,
    created_at: now,
  };
}

/** A person in the sample workflow scenes. */
const SAMPLE_PERSON: Person = {
  uid: 0,
  username: 'Sample User',
  user: 'sample',
  email: 'sample@example.com',
  department: 'Sample',
};

/** Workflow status each workflow scene is sent in (API guide §10.2). */
const WORKFLOW_STATUS: Partial<Record<NotifyScene, number>> = {
  generated: 0,
  claim: 1,
  assign: 1,
  processed: 2,
  reactive: 0,
  close: 9,
  remind_pending: 0,
  remind_processing: 1,
};

/**
 * What the producers put in a job's render context for `scene` (alarms/effects.ts notices,
 * workflows/views.ts), with the given alarm (stored or sample) and sample values for the rest.
 */
export function previewContext(
  task: Task,
  scene: NotifyScene,
  history: HistoryRecord,
  now: number,
  record?: AlarmRecord,
): RenderContext {
  const h = historyRef(history);
  switch (scene) {
    case 'compressed':
      return { task: taskContext(task), history: h, context: { type: 'compressed' } };
    case 'not_compress':
      return {
        task: taskContext(task),
        history: h,
        context: { type: record && record.outcome !== 'compressed' ? record.outcome : 'compress_disable' },
      };
    case 'recovery':
      return { task: taskContext(task), history: h, context: { type: 'recovery' } };
    case 'upgrade': {
      const fire = record?.upgrades?.[0];
      const s = task.upgrade?.strategies?.[fire?.index ?? 0];
      const rule = s
        ? { interval: s.interval, count: s.count, level: s.level, reuse_receiver: s.reuse_receiver }
        : { interval: 10, count: 5, level: 3, reuse_receiver: 1 };
      return { task: taskContext(task), history: h, context: { rule, zcount: fire?.zcount ?? rule.count } };
    }
    default: {
      const workflow = workflowRef({ id: 0, status: WORKFLOW_STATUS[scene] ?? 0, created_at: now });
      const operation = ['claim', 'assign', 'processed', 'reactive', 'close'].includes(scene);
      return {
        task: taskRef(task),
        history: h,
        workflow,
        ...(operation
          ? {
              pipeline: pipelineRef({
                remark: 'sample remark',
                user: SAMPLE_PERSON,
                ...(scene === 'assign' ? { assignto: [SAMPLE_PERSON] } : {}),
              }),
            }
          : {}),
      };
    }
  }
}

export interface PreviewInput {
  uid: number;
  task_id: number;
  scene: NotifyScene;
  channel: NotifyChannel;
  uuid?: string;
}

export interface PreviewDeps {
  taskForUser: typeof taskForUser;
  getTemplate: (id: number) => Promise<Template | undefined>;
  getAlarmRecord: typeof getAlarmRecord;
  now: () => number;
  /** `publicBaseUrl`: where claim links lead (none: messages carry no claim link). */
  env: () => { env: string; timeZone: string; publicBaseUrl?: string };
}

export const previewDeps: PreviewDeps = {
  taskForUser,
  getTemplate,
  getAlarmRecord,
  now: nowSeconds,
  env: () => ({ env: config().envName, timeZone: config().timeZone, publicBaseUrl: config().publicBaseUrl }),
};

/** Renders a task's template for a scene and channel exactly as the channel would send it (read permission). */
export async function previewTemplate(
  input: PreviewInput,
  deps: PreviewDeps = previewDeps,
): Promise<TemplatePreview> {
  const task = await deps.taskForUser(input.uid, input.task_id, 'read');
  const templateId = task.template?.template_id;
  const [predefined, record] = await Promise.all([
    templateId ? deps.getTemplate(templateId) : undefined,
    input.uuid ? deps.getAlarmRecord(task.id, input.uuid) : undefined,
  ]);
  if (input.uuid && !record) throw new NotFoundError(`alarm [${input.uuid}] of task [${task.id}] not found`);
  const now = deps.now();
  const history = record?.history ?? sampleHistory(task.id, now, input.scene === 'compressed');
  const context = previewContext(task, input.scene, history, now, record);
  const { publicBaseUrl, ...env } = deps.env();
  // A claim link as the job record shows it (API guide §11.7): the place it takes, no token.
  const claimUrl =
    publicBaseUrl && scenesClaimLink(task, input.scene, input.channel)
      ? shownClaimUrl(publicBaseUrl)
      : undefined;
  const resolved = resolveTemplate(task.template, predefined, input.scene, input.channel, {
    claimLink: claimUrl !== undefined,
  });
  const values = buildRenderValues(context, task, env);
  if (claimUrl) values.workflow = { ...values.workflow, claim_url: claimUrl };
  const message = channelMessage(input.channel, renderMessage(resolved, values));
  return {
    scene: input.scene,
    channel: input.channel,
    source: TEMPLATE_SOURCES[resolved.type],
    alarm: record ? 'stored' : 'sample',
    ...(record ? { uuid: record.uuid } : {}),
    format: message.format,
    ...(message.title !== undefined ? { title: message.title } : {}),
    text: message.text,
  };
}
