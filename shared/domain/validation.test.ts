import { describe, expect, it } from 'vitest';
import { ValidationError } from './errors.ts';
import { compileCoercingSchema, compileSchema } from './validation.ts';

const schema = {
  type: 'object',
  required: ['name', 'receiver'],
  properties: {
    name: { type: 'string', maxLength: 100 },
    level: { enum: [0, 1, 2, 3] },
    phone: { type: 'string', pattern: '^1\\d{10}$', 'x-message': 'must be a mainland mobile number' },
    receiver: {
      type: 'object',
      additionalProperties: false,
      properties: { ids: { type: 'array', items: { type: 'integer' }, uniqueItems: true } },
    },
  },
};

function errorsOf(fn: () => void) {
  try {
    fn();
  } catch (err) {
    if (err instanceof ValidationError) return { msg: err.message, errors: err.errors };
    throw err;
  }
  return undefined;
}

describe('schema validation errors', () => {
  const validate = compileSchema(schema);

  it('names the field of every problem, first one as the message', () => {
    const res = errorsOf(() =>
      validate({ name: 'x'.repeat(101), level: 7, receiver: { ids: [1, 1], extra: 1 } }),
    );
    expect(res?.msg).toBe('name must be at most 100 characters');
    expect(res?.errors).toEqual(
      expect.arrayContaining([
        { field: 'name', message: 'must be at most 100 characters' },
        { field: 'level', message: 'must be one of 0, 1, 2, 3' },
        { field: 'receiver.ids', message: 'must not contain duplicates' },
        { field: 'receiver.extra', message: 'is not a known field' },
      ]),
    );
  });

  it('reports missing fields with their path', () => {
    expect(errorsOf(() => validate({}))?.errors).toEqual([
      { field: 'name', message: 'is required' },
      { field: 'receiver', message: 'is required' },
    ]);
  });

  it('uses x-message when the schema gives one', () => {
    expect(errorsOf(() => validate({ name: 'a', receiver: {}, phone: '12' }))?.msg).toBe(
      'phone must be a mainland mobile number',
    );
  });

  it('keeps JSON types strict but coerces query strings', () => {
    const ids = { type: 'object', properties: { id: { type: 'integer' } } };
    expect(errorsOf(() => compileSchema(ids)({ id: '5' }))?.msg).toBe('id must be an integer');
    const input: Record<string, unknown> = { id: '5' };
    compileCoercingSchema(ids)(input);
    expect(input.id).toBe(5);
  });
});
