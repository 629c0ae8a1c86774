import type { ValidateFunction } from 'ajv';
import { describe, expect, it } from 'vitest';
import {
  standalone as showWorkflowValidators,
  validate as validateShowWorkflow,
} from '../generated/validators/routes/http/workflow/show-workflow.ts';
import { standalone as taskValidators, validateCreateShape } from '../generated/validators/tasks.ts';
import { compileCoercingSchema, compileSchema, compileWithAjv } from './compile-schema.ts';
import { ValidationError } from './errors.ts';
import { createTaskSchema } from './tasks/schemas.ts';
import { toFieldErrors } from './validation.ts';
import { showWorkflowSchema } from './workflows/schemas.ts';

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

describe('generated validators (shared/generated/validators)', () => {
  it('give the field errors of the compiled schema, x-message included (task create body)', () => {
    // Arrange
    const [generated, compiled]: ValidateFunction[] = [
      taskValidators().validateCreateShape,
      compileWithAjv('json', createTaskSchema),
    ];
    const body = {
      created_by: '1',
      name: 'x'.repeat(101),
      department_id: 1,
      flag_save_db: 2,
      receiver: { channels: { email: [1], webhook: ['ftp://example.com'] } },
      filter: { enable: true, conditions: [{ rule: [{ field: 'ctn.host', operator: 'like' }] }] },
    };

    // Act
    const okGenerated = generated(structuredClone(body));
    const okCompiled = compiled(structuredClone(body));

    // Assert
    expect([okGenerated, okCompiled]).toEqual([false, false]);
    const errors = toFieldErrors(generated.errors);
    expect(errors).toEqual(toFieldErrors(compiled.errors));
    expect(errors).toEqual([
      { field: 'created_by', message: 'must be an integer' },
      { field: 'name', message: 'must be at most 100 characters' },
      { field: 'flag_save_db', message: 'must be one of 0, 1' },
      { field: 'receiver.channels.webhook', message: 'must be an http(s) URL' },
      { field: 'filter.mode', message: 'is required' },
      { field: 'filter.conditions.0.level', message: 'is required' },
      { field: 'filter.conditions.0.rule.0.threshold', message: 'is required' },
      {
        field: 'filter.conditions.0.rule.0.operator',
        message: expect.stringMatching(/^must be one of eq-self, /),
      },
    ]);
  });

  it('coerce query strings as the compiled schema does (workflow show)', () => {
    // Arrange
    const [generated, compiled]: ValidateFunction[] = [
      showWorkflowValidators().validate,
      compileWithAjv('coercing', showWorkflowSchema),
    ];
    const good = [{ id: '12' }, { id: '12' }];
    const bad = [{ id: 'x' }, { id: 'x' }];

    // Act
    const results = [generated(good[0]), compiled(good[1]), generated(bad[0]), compiled(bad[1])];

    // Assert
    expect(results).toEqual([true, true, false, false]);
    expect(good).toEqual([{ id: 12 }, { id: 12 }]);
    expect(toFieldErrors(generated.errors)).toEqual([{ field: 'id', message: 'must be an integer' }]);
    expect(toFieldErrors(compiled.errors)).toEqual(toFieldErrors(generated.errors));
  });

  it('are checked validators: field errors thrown, query numbers plain decimals before coercion', () => {
    // Arrange
    const query: Record<string, unknown> = { id: '7' };

    // Act
    const taskErrors = errorsOf(() => validateCreateShape({}));
    validateShowWorkflow(query);
    const hex = errorsOf(() => validateShowWorkflow({ id: '0x7' }));

    // Assert
    expect(taskErrors?.errors).toContainEqual({ field: 'name', message: 'is required' });
    expect(query.id).toBe(7);
    expect(hex?.errors).toEqual([{ field: 'id', message: 'must be an integer' }]);
  });
});
