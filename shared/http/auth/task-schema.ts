/**
 * The task-auth parameters (API guide §3.2) that `taskAuth` checks before the route's own schema. Its
 * own module: the validator generator and the OpenAPI generator read it without loading the mode.
 */
export const TASK_AUTH_SCHEMA = {
  type: 'object',
  required: ['id', 'timestamp', 'sign'],
  properties: {
    id: { type: 'integer', minimum: 1, maximum: Number.MAX_SAFE_INTEGER },
    timestamp: { type: ['integer', 'string'], pattern: '^[0-9]{1,12}$' },
    sign: { type: 'string', minLength: 1, maxLength: 128 },
  },
};
