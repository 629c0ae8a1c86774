import fc from 'fast-check';
import { serviceNow } from '../../support/client.ts';
import { ids, paging, type Spec, SPECS, uids } from './specs.ts';
import { scheduleId, task } from './targets.ts';
import type { Json } from './values.ts';

/**
 * The on-call schedule routes (API guide §18): a valid request on the fuzz schedule, acting as user 1
 * (who may change it), and the poisons each must refuse. Every case poisons something, so nothing is
 * stored, edited, deleted or issued.
 */
const layer = { name: 'l', start: '2026-01-01T09:00', turn: { every: 1, unit: 'day' }, users: [1, 2] };
const config = { time_zone: 'UTC', layers: [layer] };
const scheduleBody = { name: 'fuzz', department_id: 1, ...config };
const badConfig: [string[], fc.Arbitrary<Json>][] = [
  [['time_zone'], fc.constantFrom<Json>('Mars/Base', '', 1, null, 'x'.repeat(65))],
  [
    ['layers'],
    fc.constantFrom<Json>(
      [],
      'x',
      [{ ...layer, start: '2026-02-30T09:00' }],
      [{ ...layer, turn: { every: 0, unit: 'day' } }],
      [{ ...layer, turn: { every: 1, unit: 'month' } }],
      [{ ...layer, users: [] }],
      [{ ...layer, users: [424242] }],
      [{ ...layer, restrictions: [{ days: [8], from: '09:00', to: '17:00' }] }],
      [{ ...layer, restrictions: [{ days: [1], from: '24:00', to: '17:00' }] }],
      Array(11).fill(layer),
    ),
  ],
  [['fallback'], fc.constantFrom<Json>('x', [0], [424242], [{ $raw: '1e20' }])],
  [
    ['coverage'],
    fc.constantFrom<Json>({ alarm_task_id: 424242 }, { alarm_task_id: 1, horizon_days: 91 }, 'x'),
  ],
];
const ref =
  (source: 'query' | 'json' | 'form', extra: Record<string, Json> = {}): Spec['valid'] =>
  async () => ({
    auth: 'app',
    input: { uid: source === 'json' ? 1 : '1', id: scheduleId, ...extra },
    source,
  });
const refPoisons = (json: boolean): [string[], fc.Arbitrary<Json>][] => [
  [['uid'], uids(json)],
  [['id'], ids(json)],
];

Object.assign(SPECS, {
  'POST /schedule/store': {
    valid: async () => ({ auth: 'app', input: { uid: 1, ...scheduleBody }, source: 'json' }),
    poisons: [
      [['uid'], fc.constantFrom<Json>(0, -1, 'x', 424242, 1.5, null)],
      [['name'], fc.constantFrom<Json>('', 'n'.repeat(101), 1, null)],
      [['department_id'], fc.constantFrom<Json>(0, 'x', 424242, null)],
      ...badConfig,
    ],
  },
  'GET /schedule/show': { valid: ref('query'), poisons: refPoisons(false) },
  'PUT /schedule/update': {
    valid: ref('json', scheduleBody),
    poisons: [
      ...refPoisons(true),
      ...badConfig,
      [['effective_from'], fc.constantFrom<Json>(1, -1, 'x', 1.5)],
    ],
  },
  'DELETE /schedule': { valid: ref('form'), poisons: refPoisons(false) },
  'GET /schedule/list': {
    valid: async () => ({ auth: 'app', input: { uid: '1' }, source: 'query' }),
    poisons: [[['uid'], uids().filter((u) => u !== '5')], ...paging],
  },
  'POST /schedule/override': {
    valid: async () => {
      const now = await serviceNow();
      return ref('json', { start: now + 86_400, end: now + 90_000, user: 2 })();
    },
    poisons: [
      ...refPoisons(true),
      [['end'], fc.constantFrom<Json>(0, 1, 'x', null)],
      [['user'], fc.constantFrom<Json>(0, 'x', 424242, null)],
    ],
  },
  'DELETE /schedule/override': {
    valid: ref('form', { override_id: '424242' }),
    poisons: [...refPoisons(false), [['override_id'], fc.constantFrom<Json>('0', 'x', '', '424242')]],
  },
  'GET /schedule/oncall': {
    valid: ref('query', { at: '1790000000' }),
    poisons: [...refPoisons(false), [['at'], fc.constantFrom<Json>('x', '-1', '1.5', '1e20')]],
  },
  'GET /schedule/final': {
    valid: ref('query', { from: '1790000000', to: '1790086400' }),
    poisons: [
      ...refPoisons(false),
      [['to'], fc.constantFrom<Json>('1789999999', '1790000000', '1800000000', 'x')],
      [['from'], fc.constantFrom<Json>('x', '-1', '1790086400')],
    ],
  },
  'POST /schedule/preview': {
    valid: ref('json', { ...config, from: 1790000000, to: 1790086400 }),
    poisons: [
      ...refPoisons(true),
      ...badConfig,
      [['to'], fc.constantFrom<Json>(1789999999, 1800000000, 'x')],
    ],
  },
  'PUT /schedule/ical': {
    valid: ref('json'),
    poisons: [...refPoisons(true), [['revoke'], fc.constantFrom<Json>('yes', 1, null)]],
  },
  'GET /alarmtask/oncall': {
    valid: async () => ({ auth: 'app', input: { uid: '1', task_id: task.id }, source: 'query' }),
    poisons: [
      [['uid'], uids()],
      [['task_id'], ids()],
      [['days'], fc.constantFrom<Json>('0', '91', 'x', '1.5')],
    ],
  },
} satisfies Record<string, Spec>);
