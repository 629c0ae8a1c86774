import { describe, expect, it } from 'vitest';
import { appHeaders, baseUrl, api, taskAuth } from '../support/client.ts';
import { type CreatedTask, createTask, taskBody, uniqueTaskName } from '../support/tasks.ts';

/**
 * Client input that once made the task API answer 500 (API guide §1.5, §2.3):
 * each must be a 422 naming the field, with a message that says nothing about the datastore, and
 * must change nothing.
 */
async function send(method: string, path: string, text: string) {
  const res = await fetch(`${baseUrl()}${path}`, {
    method,
    headers: { ...(await appHeaders()), 'content-type': 'application/json' },
    body: text,
  });
  return {
    status: res.status,
    ...((await res.json()) as { code: number; msg: string; data: { errors?: { field: string }[] } }),
  };
}

/** The body with `part` spliced in as raw JSON text (numbers JSON.stringify cannot write). */
const withRaw = (body: Record<string, unknown>, part: string) =>
  `${JSON.stringify(body).slice(0, -1)},${part}}`;

const CASES: [string, string, string][] = [
  ['created_by 1e20', '"created_by":1e20', 'created_by'],
  ['created_by 2^53+1', '"created_by":9007199254740993', 'created_by'],
  ['department_id 1e308', '"department_id":1e308', 'department_id'],
  ['a permission uid 1e20', '"permission":{"rw":[1e20]}', 'permission.rw.0'],
  [
    'an e-mail uid 9007199254740993',
    '"receiver":{"channels":{"email":[9007199254740993]}}',
    'receiver.channels.email.0',
  ],
  [
    'a dispatch item uid 1e20',
    '"receiver":{"channels":{"email":[1]},"dispatch":[{"conditions":[{"rule":[{"field":"ctn.a","operator":"eq","threshold":"1"}]}],"receiver":{"channels":{"sms":[1e20]}}}]}',
    'receiver.dispatch.0.receiver.channels.sms.0',
  ],
  [
    'an alarm group 1e20',
    '"receiver":{"alarmgroup":[1e20],"channels":{"email":[1]}}',
    'receiver.alarmgroup.0',
  ],
  ['a tag 1e308', '"task_tags":[1e308]', 'task_tags.0'],
  [
    'a disabled module with __proto__',
    '"filter":{"enable":false,"x":{"__proto__":{"polluted":1}}}',
    'filter.x.__proto__',
  ],
  [
    'a disabled module with constructor',
    '"workflow":{"enable":false,"constructor":1}',
    'workflow.constructor',
  ],
  ['a disabled module with 2^53+2', '"upgrade":{"enable":false,"n":9007199254740994}', 'upgrade.n'],
  ['a disabled module with 1e-200', '"recovery":{"enable":false,"n":1e-200}', 'recovery.n'],
  [
    'a disabled module nested 10,000 levels',
    `"compress":{"enable":false,"deep":${'['.repeat(10_000)}${']'.repeat(10_000)}}`,
    'compress.deep',
  ],
];

function expectRefusal(res: Awaited<ReturnType<typeof send>>, field: string) {
  expect([res.status, res.code]).toEqual([422, 422]);
  expect(res.msg.startsWith(field)).toBe(true);
  expect(res.msg).not.toMatch(/dynamo|database|datastore|table/i);
}

describe('hostile task bodies get a 422 naming the field and change nothing', () => {
  it.each(CASES)('POST /alarmtask/store: %s', async (_name, part, field) => {
    // Arrange
    const name = uniqueTaskName('hostile');
    // Act
    const res = await send('POST', '/alarmtask/store', withRaw({ ...taskBody(), name }, part));
    const again = await api.post('/alarmtask/store', taskBody({ name }));
    // Assert: refused, and the name is still free (nothing was stored)
    expectRefusal(res, field);
    expect(again.code).toBe(0);
  });

  // created_by is not part of an update (it never changes): those cases are the store's only.
  const UPDATES = CASES.filter(([, , field]) => field !== 'created_by');
  it.each(UPDATES)('PUT /alarmtask/update and updatefields: %s', async (_name, part, field) => {
    // Arrange
    const t: CreatedTask = await createTask();
    const before = (await api.get('/alarmtask/show', { query: await taskAuth(t) })).data.task;
    const top = field.split('.')[0];
    // Act
    const update = await send(
      'PUT',
      '/alarmtask/update',
      withRaw({ ...t.body, ...(await taskAuth(t)) }, part),
    );
    const fields = await send(
      'PUT',
      '/alarmtask/updatefields',
      withRaw({ ...(await taskAuth(t)), filter_fields: [top] }, part),
    );
    const after = (await api.get('/alarmtask/show', { query: await taskAuth(t) })).data.task;
    // Assert
    expectRefusal(update, field);
    // A partial update names the path it copies (the top-level field) or the field inside it.
    expectRefusal(fields, top);
    expect(after).toEqual(before);
  });
});
