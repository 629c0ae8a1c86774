import { ID_SCHEMA } from '../validation.ts';
/**
 * JSON Schemas of the alarm task API (API guide §5.2, §5.7, §2, §16). They check shape, types,
 * enumerations and the "required when enabled" rules; the rules that need custom wording or span
 * several fields live in rules.ts. A module (workflow, filter, upgrade, compress, recovery) is only
 * checked in depth when its `enable` is true (API guide §5.4).
 */
import { channelsSchema } from '../channels/schema.ts';
import { oncallReceiversSchema } from '../schedules/schemas.ts';
import { OPERATORS, OPERATORS_WITHOUT_THRESHOLD } from './model.ts';

const id = ID_SCHEMA;
const positive = (max: number) => ({ type: 'integer', exclusiveMinimum: 0, maximum: max });
/** Minutes: at most one year. */
const minutes = positive(525_600);

/** At most this many distinct users may hold permissions on one task (transaction size, see rules.ts). */
export const MAX_PERMISSION_USERS = 90;

const rule = {
  type: 'object',
  required: ['field', 'operator'],
  properties: {
    field: { type: 'string', minLength: 1, maxLength: 200 },
    operator: { enum: [...OPERATORS], 'x-message': `must be one of ${OPERATORS.join(', ')}` },
    threshold: { type: 'string', maxLength: 2000 },
  },
  // Every operator but isset, not-isset and eq-self compares with a threshold (API guide §6.3).
  if: {
    required: ['operator'],
    properties: { operator: { not: { enum: [...OPERATORS_WITHOUT_THRESHOLD] } } },
  },
  // biome-ignore lint/suspicious/noThenProperty: JSON Schema keyword
  then: { required: ['threshold'] },
};

const rules = { type: 'array', minItems: 1, maxItems: 50, items: rule };

const conditions = {
  type: 'array',
  minItems: 1,
  maxItems: 50,
  items: { type: 'object', required: ['rule'], properties: { rule: rules } },
};

const uidList = { type: 'array', items: id, maxItems: MAX_PERMISSION_USERS };

/** A receiver (API guide §5.3 request form). The task-level one requires robot secrets and may dispatch. */
function receiverSchema(level: 'task' | 'sub') {
  return {
    type: 'object',
    properties: {
      alarmgroup: { type: 'array', items: id, maxItems: 100 },
      channels: channelsSchema({ robotSecretRequired: level === 'task' }),
      oncall: oncallReceiversSchema,
      ...(level === 'task'
        ? {
            dispatch: {
              type: 'array',
              maxItems: 20,
              items: {
                type: 'object',
                required: ['conditions', 'receiver'],
                properties: {
                  conditions,
                  receiver: {
                    type: 'object',
                    properties: {
                      alarmgroup: { type: 'array', items: id, maxItems: 100 },
                      channels: channelsSchema({ robotSecretRequired: false }),
                      oncall: oncallReceiversSchema,
                    },
                  },
                },
              },
            },
            mode: { enum: [1, 2] },
          }
        : {}),
    },
  };
}

const subReceiver = receiverSchema('sub');

/** `receiver` is required when `reuse_receiver` is 0 (reminders, upgrade strategies). */
const receiverUnlessReused = {
  if: { required: ['reuse_receiver'], properties: { reuse_receiver: { const: 0 } } },
  // biome-ignore lint/suspicious/noThenProperty: JSON Schema keyword
  then: { required: ['receiver'] },
};

/** A module checked in depth only when `enable` is true. */
function moduleSchema(enabled: Record<string, unknown>) {
  return {
    type: 'object',
    properties: { enable: { type: 'boolean' } },
    if: { required: ['enable'], properties: { enable: { const: true } } },
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema keyword
    then: enabled,
  };
}

const workflow = moduleSchema({
  properties: {
    reminds: {
      type: 'array',
      maxItems: 20,
      items: {
        type: 'object',
        required: ['mode', 'status', 'interval', 'reuse_receiver'],
        properties: {
          mode: { enum: ['once', 'cycle'] },
          status: { enum: [0, 1] },
          interval: minutes,
          reuse_receiver: { enum: [0, 1] },
          receiver: subReceiver,
        },
        ...receiverUnlessReused,
      },
    },
  },
});

const filter = moduleSchema({
  required: ['mode', 'conditions'],
  properties: {
    mode: { enum: [1, 2] },
    conditions: {
      type: 'array',
      minItems: 1,
      maxItems: 50,
      items: {
        type: 'object',
        required: ['rule', 'level'],
        properties: { rule: rules, level: { enum: [0, 1, 2, 3, 9] } },
      },
    },
    not_match: { enum: [0, 1] },
  },
});

const upgrade = moduleSchema({
  required: ['strategies'],
  properties: {
    strategies: {
      type: 'array',
      minItems: 1,
      maxItems: 20,
      items: {
        type: 'object',
        required: ['interval', 'count', 'level', 'reuse_receiver'],
        properties: {
          interval: minutes,
          count: positive(1_000_000),
          level: { enum: [0, 1, 2, 3] },
          reuse_receiver: { enum: [0, 1] },
          receiver: subReceiver,
        },
        ...receiverUnlessReused,
      },
    },
  },
});

const compress = moduleSchema({
  required: ['method', 'strategy', 'strategy_cycle'],
  properties: {
    // 2 ("smart") passes here and is refused with its own message in rules.ts.
    method: { enum: [1, 2, 3, 4] },
    conditions,
    strategy: { enum: [1, 2, 3, 4, 5] },
    strategy_cycle: minutes,
    strategy_count: positive(1_000_000),
    not_match: { enum: [0, 1] },
  },
  allOf: [
    {
      if: { required: ['method'], properties: { method: { const: 1 } } },
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema keyword
      then: { required: ['conditions'] },
    },
    {
      if: { required: ['strategy'], properties: { strategy: { enum: [3, 4, 5] } } },
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema keyword
      then: { required: ['strategy_count'] },
    },
  ],
});

const recovery = moduleSchema({
  required: ['mode'],
  properties: { mode: { enum: [1, 2] }, conditions, delay_interval: minutes },
  allOf: [
    {
      if: { required: ['mode'], properties: { mode: { const: 1 } } },
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema keyword
      then: { required: ['conditions'] },
    },
    {
      if: { required: ['mode'], properties: { mode: { const: 2 } } },
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema keyword
      then: { required: ['delay_interval'] },
    },
  ],
});

const templateEntry = {
  type: 'object',
  properties: { format: { enum: [1, 2, 3, 4] }, template: { type: 'string', maxLength: 10_000 } },
};
const templateScene = {
  type: 'object',
  properties: Object.fromEntries(
    ['sms', 'email', 'phone', 'dingworker', 'dinggroup', 'yachworker', 'yachgroup', 'wechat'].map((c) => [
      c,
      templateEntry,
    ]),
  ),
};
const template = {
  type: 'object',
  properties: {
    template_id: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    udf: {
      type: 'object',
      properties: {
        compressed: templateScene,
        not_compress: templateScene,
        upgrade: templateScene,
        recovery: templateScene,
      },
    },
  },
};

/** The task configuration of create and full update (API guide §5.2 without created_by / task auth). */
const configProperties = {
  name: { type: 'string', minLength: 1, maxLength: 100 },
  department_id: id,
  flag_save_db: { enum: [0, 1] },
  task_tags: { type: 'array', items: id, maxItems: 100, uniqueItems: true },
  permission: { type: 'object', properties: { rw: uidList, ro: uidList } },
  receiver: receiverSchema('task'),
  workflow,
  filter,
  upgrade,
  compress,
  recovery,
  template,
};

export const taskConfigSchema = {
  type: 'object',
  required: ['name', 'department_id', 'flag_save_db', 'receiver'],
  properties: configProperties,
};

export const createTaskSchema = {
  type: 'object',
  required: ['created_by', ...taskConfigSchema.required],
  properties: { created_by: id, ...configProperties },
};

/** First segments a `filter_fields` path may start with (API guide §5.7). */
export const UPDATABLE_FIELDS = [
  'name',
  'department_id',
  'flag_save_db',
  'task_tags',
  'permission',
  'receiver',
  'workflow',
  'filter',
  'upgrade',
  'compress',
  'recovery',
  'template',
] as const;

/** A what-if replay the save must match (API guide §13.7): update and updatefields take it. */
export const replayIdSchema = { type: 'string', minLength: 1, maxLength: 64 };

export const updateFieldsSchema = {
  type: 'object',
  required: ['filter_fields'],
  properties: {
    filter_fields: {
      type: 'array',
      minItems: 1,
      maxItems: 50,
      items: { type: 'string', minLength: 1, maxLength: 200 },
    },
    replay_id: replayIdSchema,
  },
};

export const pauseSchema = {
  type: 'object',
  required: ['time'],
  properties: {
    time: { type: 'integer', minimum: 1, maximum: 10_080, 'x-message': 'must be an integer from 1 to 10080' },
  },
};
