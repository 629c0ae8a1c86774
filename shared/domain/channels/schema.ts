import { ID_SCHEMA } from '../validation.ts';
/**
 * JSON Schema of receiver channels (API guide §5.3 request form). Shared by task
 * receivers, dispatch items, reminder and upgrade receivers, alarm reports and alarm groups.
 */
const uids = { type: 'array', items: ID_SCHEMA, maxItems: 500 };

export function robotsSchema(secretRequired: boolean) {
  return {
    type: 'array',
    maxItems: 6,
    items: {
      type: 'object',
      required: secretRequired ? ['webhook', 'secret'] : ['webhook'],
      properties: {
        webhook: { type: 'string', minLength: 1, maxLength: 500 },
        secret: { type: 'string', maxLength: 200, ...(secretRequired ? { minLength: 1 } : {}) },
      },
    },
  };
}

const URL_MESSAGE = 'must be an http(s) URL';

/** A URL string or `{url}` (API guide §5.3); both branches word their failure the same way. */
export const webhookUrlSchema = {
  anyOf: [
    { type: 'string', maxLength: 2000, pattern: '^(https?://[^\\s]+)?$', 'x-message': URL_MESSAGE },
    {
      type: 'object',
      required: ['url'],
      properties: {
        url: { type: 'string', maxLength: 2000, pattern: '^https?://[^\\s]+$', 'x-message': URL_MESSAGE },
      },
      'x-message': URL_MESSAGE,
    },
  ],
};

export function channelsSchema(opts: { robotSecretRequired: boolean }) {
  return {
    type: 'object',
    properties: {
      sms: uids,
      email: uids,
      phone: uids,
      dingworker: uids,
      yachworker: uids,
      wechat: uids,
      dinggroup: robotsSchema(opts.robotSecretRequired),
      yachgroup: robotsSchema(opts.robotSecretRequired),
      webhook: webhookUrlSchema,
    },
  };
}
