import { ID_SCHEMA } from '../validation.ts';
import { ALARM_RESULTS } from '../alarms/log.ts';

/** Input schemas of the alarm read endpoints (query strings: numbers are coerced). */
const time = { type: 'integer', minimum: 0, maximum: 99_999_999_999 };
const common = {
  uid: ID_SCHEMA,
  task_id: ID_SCHEMA,
  from: time,
  to: time,
};

/** GET /alarmtask/alarms */
export const listAlarmsSchema = {
  type: 'object',
  required: ['uid', 'task_id'],
  properties: {
    ...common,
    level: { type: 'integer', enum: [0, 1, 2, 3] },
    outcome: { type: 'string', enum: ALARM_RESULTS },
    metric: { type: 'string', minLength: 1, maxLength: 64 },
    batch: ID_SCHEMA,
    limit: { type: 'integer', minimum: 1, maximum: 100 },
    cursor: { type: 'string', minLength: 1, maxLength: 300 },
  },
};

/** GET /alarmtask/alarm and /alarmtask/alarm/trace: one alarm by uuid or history id. */
export const alarmRefSchema = {
  type: 'object',
  required: ['uid', 'task_id'],
  properties: {
    ...common,
    uuid: { type: 'string', minLength: 1, maxLength: 100 },
    history_id: ID_SCHEMA,
  },
};

/** GET /alarmtask/alarms/stats */
export const alarmStatsSchema = { type: 'object', required: ['uid', 'task_id'], properties: common };
