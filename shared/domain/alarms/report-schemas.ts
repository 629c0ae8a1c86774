import { channelsSchema, webhookUrlSchema } from '../channels/schema.ts';
import { oncallReceiversSchema } from '../schedules/schemas.ts';
import { ID_SCHEMA } from '../validation.ts';

/**
 * The body of `POST /alarm/report` after authentication (API guide §7.1). `ctn` is checked by hand
 * first (its messages are part of the contract); the authentication fields are checked by
 * `authenticateAlarm`. Unknown fields are ignored (the Java SDK sends `channels`, `yachGroups` and
 * `dingGroups` beside `receiver`).
 */
export const UUID_PATTERN = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';

/** `ctn` may not nest deeper than this (API guide §7.3). */
export const MAX_CTN_DEPTH = 64;

const channels = channelsSchema({ robotSecretRequired: false }) as {
  type: 'object';
  properties: Record<string, unknown>;
};

/**
 * A task receiver request form without dispatch (robot secrets optional, as in dispatch items), plus
 * what the alarm SDKs send when the caller set no receiver: `channels` as an empty array (PHP) and
 * the webhook as an array of URLs (Go).
 */
const receiverSchema = {
  type: 'object',
  properties: {
    alarmgroup: {
      type: 'array',
      items: ID_SCHEMA,
      maxItems: 100,
      uniqueItems: true,
    },
    channels: {
      anyOf: [
        {
          ...channels,
          properties: {
            ...channels.properties,
            webhook: {
              anyOf: [webhookUrlSchema, { type: 'array', maxItems: 6, items: webhookUrlSchema.anyOf[0] }],
            },
          },
        },
        { type: 'array', maxItems: 0, 'x-message': 'must be an object' },
      ],
    },
    oncall: oncallReceiversSchema,
  },
};

export const reportSchema = {
  type: 'object',
  properties: {
    level: { enum: [0, 1, 2, 3] },
    notice_time: {
      anyOf: [
        { type: 'integer', minimum: 0, maximum: 99_999_999_999 },
        { type: 'string', pattern: '^[0-9]{1,11}$', 'x-message': 'must be a Unix time in seconds' },
      ],
    },
    uuid: { type: 'string', pattern: UUID_PATTERN, 'x-message': 'must be a UUID' },
    receiver: receiverSchema,
  },
};
