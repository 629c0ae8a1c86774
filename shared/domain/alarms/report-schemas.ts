import { channelsSchema } from '../tasks/channels-schema.ts';

/**
 * The body of `POST /alarm/report` after authentication (behavior 6.1). `ctn` is checked by hand
 * first (its messages are part of the contract); the authentication fields are checked by
 * `authenticateAlarm`. Unknown fields are ignored.
 */
export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

export const reportSchema = {
  type: 'object',
  properties: {
    level: { enum: [0, 1, 2, 3] },
    notice_time: { type: 'integer', minimum: 0, maximum: 99_999_999_999 },
    uuid: { type: 'string', pattern: UUID_PATTERN, 'x-message': 'must be a UUID' },
    /** A task receiver request form without dispatch (robot secrets optional, as in dispatch items). */
    receiver: {
      type: 'object',
      properties: {
        alarmgroup: {
          type: 'array',
          items: { type: 'integer', minimum: 1 },
          maxItems: 100,
          uniqueItems: true,
        },
        channels: channelsSchema({ robotSecretRequired: false }),
      },
    },
  },
};
