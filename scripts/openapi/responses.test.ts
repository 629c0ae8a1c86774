/**
 * The response schemas made of the types the handlers return (ts-json-schema-generator, then
 * JSON Schema 2020-12 components).
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { responseSchemas } from './responses.ts';
import { root } from './routes.ts';

const file = (f: string) => join(root, f);

describe('response schemas', () => {
  it('make a component of each named type a handler answers with, and of the types it reaches', () => {
    // Act
    const { data, components } = responseSchemas(root, [
      { key: 'GET /alarmtask/list', file: file('functions/http/alarmtask/list-tasks.ts') },
      { key: 'PUT /alarmtask/status', file: file('functions/http/alarmtask/status-task.ts') },
    ]);
    // Assert
    expect(data.get('GET /alarmtask/list')).toEqual({ $ref: '#/components/schemas/TaskList' });
    expect(components.TaskList).toMatchObject({
      type: 'object',
      required: ['tasks', 'next_cursor'],
      additionalProperties: false,
      properties: {
        tasks: { type: 'array', items: { $ref: '#/components/schemas/TaskSummary' } },
        next_cursor: { type: 'string', description: 'Empty when there is nothing more.' },
      },
    });
    expect(components.TaskSummary).toMatchObject({
      properties: { access: { type: 'string', enum: ['admin', 'rw', 'ro'] } },
    });
    // A union alias is its own component, each member a reference.
    expect(components.TaskStatusChanged).toEqual({
      anyOf: [{ $ref: '#/components/schemas/TaskChanged' }, { $ref: '#/components/schemas/TaskPaused' }],
      description: expect.any(String),
    });
    // 2020-12: no draft-07 leftovers.
    const text = JSON.stringify(components);
    expect(text).not.toContain('#/definitions/');
    expect(text).not.toContain('$schema');
  });

  it('refuse a handler whose data has no named type, naming the route', () => {
    // Act / Assert
    expect(() =>
      responseSchemas(root, [
        { key: 'GET /anonymous', file: file('scripts/openapi/fixtures/anonymous-data.ts') },
      ]),
    ).toThrow(/GET \/anonymous: the data the handler answers with has no named type/);
  });
});
