import { ID_SCHEMA } from '../validation.ts';
import { channelsSchema } from '../channels/schema.ts';

const id = ID_SCHEMA;
const text = (max = 200) => ({ type: 'string', maxLength: max });
const time = { type: 'integer', minimum: 0, maximum: 99_999_999_999 };

const entry = (required: string[], properties: Record<string, unknown>) => ({
  type: 'object',
  additionalProperties: false,
  required,
  properties: { ...properties, created_at: time, updated_at: time },
});

/** The directory export of behaviour §4; unknown keys are refused so typos do not import silently. */
export const directorySchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    business_units: {
      type: 'array',
      items: entry(['id', 'name'], { id, name: text(100), remark: text() }),
    },
    departments: {
      type: 'array',
      items: entry(['id', 'bu_id', 'name'], {
        id,
        bu_id: id,
        name: text(100),
        remark: text(),
        created_by: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
        updated_by: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
      }),
    },
    users: {
      type: 'array',
      items: entry(['uid', 'username', 'user', 'email'], {
        uid: id,
        username: text(100),
        user: text(100),
        email: text(200),
        department: text(200),
        phone: { type: 'string', maxLength: 20 },
        wechatid: text(100),
        role: { enum: [0, 9] },
        active: { type: 'boolean' },
      }),
    },
    alarm_groups: {
      type: 'array',
      items: entry(['id', 'name', 'receiver'], {
        id,
        name: text(100),
        remark: text(),
        receiver: {
          type: 'object',
          additionalProperties: false,
          required: ['channels'],
          properties: { channels: channelsSchema({ robotSecretRequired: false }) },
        },
      }),
    },
    tags: {
      type: 'array',
      items: entry(['id', 'name'], {
        id,
        name: text(100),
        remark: text(),
        created_by: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
      }),
    },
    templates: {
      type: 'array',
      items: entry(['id', 'name', 'template'], {
        id,
        name: text(100),
        remark: text(),
        created_by: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
        permission: { type: 'array', items: id },
        template: { type: 'object' },
      }),
    },
    apps: {
      type: 'array',
      items: entry(['id', 'name', 'token'], {
        id,
        name: text(100),
        token: { type: 'string', pattern: '^[0-9a-f]{40}$' },
      }),
    },
  },
};
