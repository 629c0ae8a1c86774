import { ALARM_RESULTS } from '../alarms/log.ts';
import { channelsSchema } from '../channels/schema.ts';
import { USER_CHANNELS } from '../../contracts/receivers.ts';
import { ID_SCHEMA } from '../validation.ts';
import { MAX_LAST } from './source.ts';

/** Input schemas of the what-if replay routes (API guide §13.7). */
const time = { type: 'integer', minimum: 0, maximum: 99_999_999_999 };
const name = { type: 'string', minLength: 1, maxLength: 64 };
const uids = { type: 'array', items: ID_SCHEMA, maxItems: 100 };

/** Most scenario alarms and expectations one replay takes. */
export const MAX_SCENARIO = 200;

/** POST /alarmtask/replay */
export const startReplaySchema = {
  type: 'object',
  required: ['uid', 'task_id'],
  properties: {
    uid: ID_SCHEMA,
    task_id: ID_SCHEMA,
    // A whole configuration (as update) or a partial one (`filter_fields`, as updatefields): checked by
    // the task rules, as the save would check it.
    config: { type: 'object' },
    last: { type: 'integer', minimum: 1, maximum: MAX_LAST },
    from: time,
    to: time,
    scenario: {
      type: 'array',
      maxItems: MAX_SCENARIO,
      items: {
        type: 'object',
        required: ['name', 'ctn'],
        properties: {
          name,
          ctn: { type: 'object' },
          level: { enum: [0, 1, 2, 3] },
          at: time,
          receiver: {
            type: 'object',
            properties: {
              alarmgroup: { type: 'array', items: ID_SCHEMA, maxItems: 100 },
              channels: channelsSchema({ robotSecretRequired: false }),
            },
          },
          recovery: { type: 'boolean' },
        },
      },
    },
    expect: {
      type: 'array',
      maxItems: MAX_SCENARIO,
      items: {
        type: 'object',
        required: ['alarm'],
        properties: {
          alarm: name,
          outcome: { enum: ALARM_RESULTS, 'x-message': `must be one of ${ALARM_RESULTS.join(', ')}` },
          receivers: { type: 'object', properties: { include: uids, exclude: uids } },
          channel: { enum: [...USER_CHANNELS], 'x-message': `must be one of ${USER_CHANNELS.join(', ')}` },
        },
      },
    },
  },
};

/** GET /alarmtask/replay */
export const showReplaySchema = {
  type: 'object',
  required: ['uid', 'replay_id'],
  properties: {
    uid: ID_SCHEMA,
    replay_id: { type: 'string', minLength: 1, maxLength: 64 },
  },
};
