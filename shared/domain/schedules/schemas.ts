import { ID_SCHEMA } from '../validation.ts';
import { MAX_WINDOW_DAYS, ONCALL_CHANNELS } from './model.ts';

/**
 * JSON Schemas of the schedule API (API guide §18). Shapes, types and ranges; the rules a schema
 * cannot word (real dates, known time zones, `to` after `from`) are in rules.ts.
 */
const id = ID_SCHEMA;
/** Unix seconds. */
const instant = { type: 'integer', minimum: 0, maximum: 99_999_999_999 };
const HHMM = '^([01][0-9]|2[0-3]):[0-5][0-9]$';
const zone = { type: 'string', minLength: 1, maxLength: 64 };

const restriction = {
  type: 'object',
  required: ['days', 'from', 'to'],
  properties: {
    days: {
      type: 'array',
      minItems: 1,
      maxItems: 7,
      uniqueItems: true,
      items: { enum: [1, 2, 3, 4, 5, 6, 7], 'x-message': 'must be a weekday from 1 (Monday) to 7 (Sunday)' },
    },
    from: { type: 'string', pattern: HHMM, 'x-message': 'must be a local time HH:MM' },
    to: {
      type: 'string',
      pattern: `${HHMM}|^24:00$`,
      'x-message': 'must be a local time HH:MM (or 24:00)',
    },
  },
};
const restrictions = { type: 'array', maxItems: 20, items: restriction };
const uids = (min: number, max: number) => ({ type: 'array', minItems: min, maxItems: max, items: id });

const layer = {
  type: 'object',
  required: ['name', 'start', 'turn', 'users'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 100 },
    time_zone: zone,
    start: {
      type: 'string',
      pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}$',
      'x-message': 'must be a local date and time YYYY-MM-DDTHH:MM',
    },
    turn: {
      type: 'object',
      required: ['every', 'unit'],
      properties: {
        every: { type: 'integer', minimum: 1, maximum: 365 },
        unit: { enum: ['hour', 'day', 'week'] },
      },
    },
    users: uids(1, 50),
    restrictions,
  },
};

/** What answers depend on: versioned, an edit takes effect from its `effective_from`. */
const configProperties = {
  time_zone: zone,
  layers: { type: 'array', minItems: 1, maxItems: 10, items: layer },
  fallback: uids(0, 50),
  coverage: {
    type: 'object',
    required: ['alarm_task_id'],
    properties: {
      required: restrictions,
      horizon_days: { type: 'integer', minimum: 1, maximum: MAX_WINDOW_DAYS },
      alarm_task_id: id,
    },
  },
};

const scheduleProperties = {
  name: { type: 'string', minLength: 1, maxLength: 100 },
  department_id: id,
  permission: { type: 'object', properties: { rw: uids(0, 90), ro: uids(0, 90) } },
  ...configProperties,
};
const SCHEDULE_REQUIRED = ['name', 'department_id', 'time_zone', 'layers'];

/** POST /schedule/store */
export const storeScheduleSchema = {
  type: 'object',
  required: ['uid', ...SCHEDULE_REQUIRED],
  properties: { uid: id, ...scheduleProperties },
};

/** PUT /schedule/update: the whole schedule again, taking effect from now or a later `effective_from`. */
export const updateScheduleSchema = {
  type: 'object',
  required: ['uid', 'id', ...SCHEDULE_REQUIRED],
  properties: { uid: id, id, effective_from: instant, ...scheduleProperties },
};

/** POST /schedule/preview: an unsaved configuration over a window, diffed against the saved one (`id`). */
export const previewScheduleSchema = {
  type: 'object',
  required: ['uid', 'time_zone', 'layers', 'from', 'to'],
  properties: { uid: id, id, effective_from: instant, from: instant, to: instant, ...configProperties },
};

/** `GET /schedule/show`, `DELETE /schedule` and the calendar key's revocation name the schedule. */
export const scheduleRefSchema = {
  type: 'object',
  required: ['uid', 'id'],
  properties: { uid: id, id },
};

export const listSchedulesSchema = {
  type: 'object',
  required: ['uid'],
  properties: {
    uid: id,
    limit: { type: 'integer', minimum: 1, maximum: 100 },
    cursor: { type: 'string', maxLength: 500 },
  },
};

export const oncallQuerySchema = {
  type: 'object',
  required: ['uid', 'id'],
  properties: { uid: id, id, at: instant },
};

export const finalQuerySchema = {
  type: 'object',
  required: ['uid', 'id', 'from', 'to'],
  properties: { uid: id, id, from: instant, to: instant },
};

export const addOverrideSchema = {
  type: 'object',
  required: ['uid', 'id', 'start', 'end', 'user'],
  properties: { uid: id, id, start: instant, end: instant, user: id },
};

export const deleteOverrideSchema = {
  type: 'object',
  required: ['uid', 'id', 'override_id'],
  properties: { uid: id, id, override_id: id },
};

export const icalKeySchema = {
  type: 'object',
  required: ['uid', 'id'],
  properties: { uid: id, id, revoke: { type: 'boolean' } },
};

export const icalFeedSchema = {
  type: 'object',
  required: ['id', 'key'],
  properties: { id, key: { type: 'string', minLength: 1, maxLength: 200 } },
};

/** `receiver.oncall` (API guide §5.3): pages whoever a schedule has on call, on the listed channels. */
export const oncallReceiversSchema = {
  type: 'array',
  maxItems: 10,
  items: {
    type: 'object',
    required: ['schedule_id', 'channels'],
    properties: {
      schedule_id: id,
      channels: {
        type: 'array',
        minItems: 1,
        maxItems: ONCALL_CHANNELS.length,
        uniqueItems: true,
        items: { enum: [...ONCALL_CHANNELS] },
      },
    },
  },
};
