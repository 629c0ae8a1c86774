import fc from 'fast-check';
import { ids, type Spec, SPECS, uids } from './specs.ts';
import { task } from './targets.ts';
import type { Json } from './values.ts';

/**
 * The what-if replay routes (API guide §13.7): a valid request on the fuzz task, acting as user 1, and
 * the poisons each must refuse. Every case poisons something, so no replay runs and nothing is kept.
 */
const start: Spec['valid'] = async () => ({
  auth: 'app',
  input: { uid: 1, task_id: task.id, last: 10 },
  source: 'json',
});

Object.assign(SPECS, {
  'POST /alarmtask/replay': {
    valid: start,
    poisons: [
      [['uid'], uids(true)],
      [['task_id'], ids(true)],
      [['last'], fc.constantFrom<Json>(0, 5001, -1, 1.5, 'x', null)],
      [['from'], fc.constantFrom<Json>('x', -1, 1.5, { $raw: '1e20' })],
      [['config'], fc.constantFrom<Json>('x', 1, [], { filter_fields: ['nope'] }, { name: '' })],
      [['scenario'], fc.constantFrom<Json>('x', [{}], [{ name: 'a' }], [{ name: 'a', ctn: 'x' }])],
      [['expect'], fc.constantFrom<Json>('x', [{}], [{ alarm: 'a', outcome: 'maybe' }])],
    ],
  },
  'GET /alarmtask/replay': {
    valid: async () => ({ auth: 'app', input: { uid: '1', replay_id: 'fuzz-none' }, source: 'query' }),
    poisons: [
      [['uid'], uids(false)],
      [['replay_id'], fc.constantFrom<Json>('', 'r'.repeat(65))],
    ],
  },
} satisfies Record<string, Spec>);
