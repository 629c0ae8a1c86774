import { describe, expect, it } from 'vitest';
import { api } from '../support/client.ts';
import type { Any } from '../support/pages.ts';

describe('hostile input to the read routes', () => {
  const hostile = [
    '',
    '0',
    '-1',
    '1.5',
    '1e20',
    '9007199254740993',
    'x',
    '\u0000',
    '%',
    '#',
    '~'.repeat(2049),
    '日'.repeat(101),
    '\ud800',
    '[]',
    '{"p":0}',
    Buffer.from(JSON.stringify({ p: 0, k: '#000000000001' })).toString('base64url'),
    Buffer.from(JSON.stringify({ p: 1, k: `${'a'.repeat(1099)}#000000000001` })).toString('base64url'),
    Buffer.from(JSON.stringify({ u: '0000000000#000000000000' })).toString('base64url'),
    Buffer.from(JSON.stringify({ u: '9999999999#999999999999' })).toString('base64url'),
  ];
  const routes: [string, Record<string, string>][] = [
    ['/alarmtask/list', { uid: '1', q: 'a' }],
    ['/workflow/list', { uid: '1', task_id: '100001' }],
    ['/workflow/counts', { uid: '1', task_ids: '100001' }],
  ];

  it.each(routes)('%s answers every hostile value with an envelope, never a 5xx', async (path, valid) => {
    // Arrange
    const fields = [
      ...Object.keys(valid),
      'q',
      'cursor',
      'limit',
      'status',
      'from',
      'to',
      'claimer',
      'task_ids',
    ];
    const problems: string[] = [];
    // Act
    for (const field of new Set(fields)) {
      for (const value of hostile) {
        const res = await api.get<Any>(path, { query: { ...valid, [field]: value } });
        if (res.status >= 500 || typeof res.code !== 'number' || typeof res.msg !== 'string')
          problems.push(`${field}=${JSON.stringify(value).slice(0, 40)}: ${res.status} ${res.msg}`);
      }
    }
    // Assert
    expect(problems).toEqual([]);
  });
});
