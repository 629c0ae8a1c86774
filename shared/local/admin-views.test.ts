import { describe, expect, it } from 'vitest';
import { view } from './admin-views.ts';

describe('view', () => {
  it.each([
    ['nothing', undefined, []],
    ['an unknown command', 'nope', []],
    ['a name of the prototype', 'constructor', []],
    ['tasks with an argument', 'tasks', ['1']],
    ['alarms without a task', 'alarms', []],
    ['trace without an alarm', 'trace', ['1']],
    ['workflows with two tasks', 'workflows', ['1', '2']],
    ['deliveries without a task', 'deliveries', []],
    ['dlq with two queues', 'dlq', ['webhook', 'notify']],
    ['dlq redrive without a queue', 'dlq', ['redrive']],
    ['dlq redrive with neither a message nor --all', 'dlq', ['redrive', 'webhook']],
    ['dlq redrive with a message and more', 'dlq', ['redrive', 'webhook', 'm1', 'm2']],
  ] as [string, string | undefined, string[]][])('is not a view: %s', async (_, command, args) => {
    // Act / Assert: refused before anything is read (no table here)
    expect(await view(command, args, {})).toBe(false);
  });

  it('refuses dlq redrive with both a message and --all', async () => {
    expect(await view('dlq', ['redrive', 'webhook', 'm1'], { all: true })).toBe(false);
  });
});
