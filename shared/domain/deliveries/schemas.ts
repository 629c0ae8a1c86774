import { NOTIFY_CHANNELS, NOTIFY_SCENES } from '../tasks/templates.ts';
import { ID_SCHEMA } from '../validation.ts';

/** Input schemas of the delivery endpoints (API guide §13.4, §14): app auth plus the acting user `uid`. */
const id = ID_SCHEMA;

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 100;

const limit = {
  type: 'integer',
  minimum: 1,
  maximum: MAX_LIMIT,
  'x-message': `must be an integer from 1 to ${MAX_LIMIT}`,
};
const cursor = { type: 'string', maxLength: 4096 };

export const DELIVERY_KINDS = ['webhook', 'notify', 'all'] as const;
export type DeliveryKind = (typeof DELIVERY_KINDS)[number];

/** GET /alarmtask/deliveries */
export const listDeliveriesSchema = {
  type: 'object',
  required: ['uid', 'task_id'],
  properties: {
    uid: id,
    task_id: id,
    kind: { enum: [...DELIVERY_KINDS], 'x-message': `must be one of ${DELIVERY_KINDS.join(', ')}` },
    limit,
    cursor,
  },
};

export const DLQ_QUEUES = ['webhook', 'notify', 'alarm', 'due'] as const;
export type DlqQueue = (typeof DLQ_QUEUES)[number];
const queue = { enum: [...DLQ_QUEUES], 'x-message': `must be one of ${DLQ_QUEUES.join(', ')}` };

/** GET /delivery/dlq */
export const listDeadLettersSchema = {
  type: 'object',
  required: ['uid', 'queue'],
  properties: { uid: id, queue, task_id: id, limit },
};

/** POST /delivery/dlq/redrive: one message by id, or `all: 1` (of a task, with `task_id`). */
export const redriveSchema = {
  type: 'object',
  required: ['uid', 'queue'],
  properties: {
    uid: id,
    queue,
    message_id: { type: 'string', minLength: 1, maxLength: 512 },
    all: { enum: [1, true], 'x-message': 'must be 1' },
    task_id: id,
  },
};

/** POST /alarmtask/webhook/test */
export const testWebhookSchema = {
  type: 'object',
  required: ['uid', 'task_id'],
  properties: { uid: id, task_id: id },
};

/** POST /alarmtask/template/preview */
export const previewTemplateSchema = {
  type: 'object',
  required: ['uid', 'task_id', 'scene', 'channel'],
  properties: {
    uid: id,
    task_id: id,
    scene: { enum: [...NOTIFY_SCENES], 'x-message': `must be one of ${NOTIFY_SCENES.join(', ')}` },
    channel: { enum: [...NOTIFY_CHANNELS], 'x-message': `must be one of ${NOTIFY_CHANNELS.join(', ')}` },
    uuid: { type: 'string', minLength: 1, maxLength: 128 },
  },
};
