import { describe, expect, it } from 'vitest';
import { applyFieldPaths, fieldPathErrors } from './field-paths.ts';
import type { Task } from './model.ts';
import { configOf } from './normalize.ts';
import { parseConfig, parseCreateBody } from './rules.ts';
import { base, validationOf } from './test-bodies.ts';

describe('applyFieldPaths (API guide §5.7)', () => {
  const stored = parseCreateBody(
    base({
      task_tags: [1],
      receiver: { channels: { email: [1], dingworker: [2] } },
      template: {
        template_id: 1,
        udf: { compressed: { email: { format: 1, template: 'a' } }, upgrade: { sms: { template: 'u' } } },
      },
    }),
  ).config;

  it('copies a nested path and leaves its siblings alone', () => {
    const out = applyFieldPaths(
      stored,
      { template: { udf: { compressed: { sms: { format: 2 } } } }, name: 'ignored' },
      ['template.udf.compressed'],
    );
    expect(out.template).toEqual({
      template_id: 1,
      udf: { compressed: { sms: { format: 2 } }, upgrade: { sms: { template: 'u' } } },
    });
    expect(out.name).toBe('disk usage');
    expect(out.task_tags).toEqual([1]);
  });

  it('clears a path absent from the request', () => {
    const out = applyFieldPaths(stored, {}, ['receiver.channels.dingworker', 'task_tags']);
    expect(out.receiver.channels).toEqual({ email: [1] });
    expect(out.task_tags).toBeUndefined();
    expect(parseConfig(out, 1).task_tags).toEqual([]);
  });

  it('creates missing intermediate objects', () => {
    const out = applyFieldPaths(stored, { workflow: { reminds: [] } }, ['workflow.reminds']);
    expect(out.workflow).toEqual({ enable: false, reminds: [] });
    const deep = applyFieldPaths(configOf({ ...stored } as Task), { filter: { x: { y: 1 } } }, [
      'filter.x.y',
    ]);
    expect(deep.filter).toEqual({ enable: false, x: { y: 1 } });
  });

  it('does not modify the stored configuration it starts from', () => {
    applyFieldPaths(stored, { name: 'other' }, ['name']);
    expect(stored.name).toBe('disk usage');
  });

  it.each([
    ['status', 'status is not an updatable field'],
    ['token', 'token is not an updatable field'],
    ['receiver..email', 'receiver..email is not an updatable field'],
    ['receiver.__proto__.polluted', 'receiver.__proto__.polluted is not an updatable field'],
    ['constructor', 'constructor is not an updatable field'],
    ['name.x.y', 'name.x.y does not address a field of the configuration'],
    ['flag_save_db.a', 'flag_save_db.a does not address a field of the configuration'],
    ['receiver.mode.x', 'receiver.mode.x does not address a field of the configuration'],
  ])('refuses the path %s', (path, message) => {
    expect(validationOf(() => applyFieldPaths(stored, {}, [path])).message).toBe(message);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('lists every bad path', () => {
    expect(fieldPathErrors(['name', 'id', 'created_by']).map((e) => e.field)).toEqual(['id', 'created_by']);
  });

  it('the merged result goes through the full validation', () => {
    const merged = applyFieldPaths(stored, { receiver: {} }, ['receiver']);
    expect(validationOf(() => parseConfig(merged, 1)).message).toBe(
      'receiver must have alarmgroup or channels',
    );
  });
});
