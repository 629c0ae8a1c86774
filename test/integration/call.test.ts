import { describe, expect, inject, it } from 'vitest';
import { runCall } from '../../scripts/call.ts';
import { advanceClock, api, baseUrl } from '../support/client.ts';
import { TEST_APP } from '../support/seed.ts';
import { taskBody } from '../support/tasks.ts';

/**
 * `npm run call` (scripts/call.ts), the README's way of calling the running stack: each kind of
 * authentication it signs is accepted by the real service, and a wrong key is refused, so the
 * signature it sends is what the service checks (API guide §3).
 */
async function run(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCall(['--state', inject('stack').stateFile, ...argv], {
    out: (line) => out.push(line),
    err: (line) => err.push(line),
  });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

const app = `${TEST_APP.id}:${TEST_APP.token}`;
const wrongKey = 'f'.repeat(40);

describe('npm run call: application auth', () => {
  it('signs the headers so the service answers, and a wrong token gets 401', async () => {
    const ok = await run('--app', app, 'GET', '/department/simple');
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.out)).toMatchObject({ code: 0, data: { departments: expect.any(Array) } });
    const refused = await run('--app', `${TEST_APP.id}:${wrongKey}`, 'GET', '/department/simple');
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.out)).toMatchObject({ code: 401, msg: 'signature invalid' });
  });

  it("signs with the service's clock, so a moved test clock does not expire the signature", async () => {
    await advanceClock(600); // beyond the 300 s window of this machine's own clock
    const res = await run('--app', app, 'GET', '/department/simple', '--field', 'code');
    expect(res).toMatchObject({ code: 0, out: '0' });
  });

  it('reaches a stack named by --url as well as by the state file', async () => {
    const out: string[] = [];
    const code = await runCall(['--url', baseUrl(), '--app', app, 'GET', '/department/show?id=1'], {
      out: (line) => out.push(line),
      err: (line) => out.push(line),
    });
    expect(code).toBe(0);
    expect(JSON.parse(out.join('\n')).data.department.id).toBe(1);
  });
});

describe('npm run call: task auth and --field', () => {
  it('captures a new task, then signs its task routes in the query, the JSON body and a DELETE', async () => {
    // Arrange: create as the README does, capturing id, token and secret in one line
    const body = taskBody();
    const created = await run(
      '--app',
      app,
      'POST',
      '/alarmtask/store',
      JSON.stringify(body),
      '--field',
      'data.task.id',
      '--field',
      'data.task.token',
      '--field',
      'data.task.secret',
    );
    expect(created.code).toBe(0);
    const [id, token, secret] = created.out.split('\t');
    expect(Number(id)).toBeGreaterThanOrEqual(100001);
    expect(token).toMatch(/^[0-9a-f]{40}$/);
    expect(secret).toMatch(/^[0-9a-f]{40}$/);

    // Act + assert: GET (query), PUT (JSON body), a wrong secret, DELETE (query)
    const show = await run(
      '--app',
      app,
      '--task',
      `${id}:${secret}`,
      'GET',
      '/alarmtask/show',
      '--field',
      'data.task.name',
    );
    expect(show).toMatchObject({ code: 0, out: body.name });
    const pause = await run(
      '--app',
      app,
      '--task',
      `${id}:${secret}`,
      'PUT',
      '/alarmtask/pause',
      '{"time":5}',
    );
    expect(pause.code).toBe(0);
    expect(JSON.parse(pause.out).data).toEqual({ id: Number(id), time: 5 });
    const wrong = await run(
      '--app',
      app,
      '--task',
      `${id}:${wrongKey}`,
      'GET',
      '/alarmtask/show',
      '--field',
      'data.task.name',
    );
    expect(wrong.code).toBe(1);
    expect(wrong.out).toBe('');
    expect(wrong.err).toContain('"code":401');
    const del = await run('--app', app, '--task', `${id}:${secret}`, 'DELETE', '/alarmtask');
    expect(del.code).toBe(0);
    const gone = await api.get('/alarmtask/show', { query: { id, timestamp: 0, sign: 'x' } });
    expect(gone.status).toBe(404);
  });

  it('says which field an answer lacks', async () => {
    const res = await run('--app', app, 'GET', '/department/simple', '--field', 'data.nothing');
    expect(res.code).toBe(1);
    expect(res.err).toContain('the answer has no data.nothing');
  });
});

describe('npm run call: alarm auth', () => {
  it('signs /alarm/report and /alarm/test in the body; a wrong token is refused in the envelope', async () => {
    const created = await run(
      '--app',
      app,
      'POST',
      '/alarmtask/store',
      JSON.stringify(taskBody()),
      '--field',
      'data.task.id',
      '--field',
      'data.task.token',
    );
    const [id, token] = created.out.split('\t');
    const report = await run(
      '--alarm',
      `${id}:${token}`,
      'POST',
      '/alarm/report',
      '{"ctn":{"host":"web-1"}}',
      '--field',
      'data.uuid',
    );
    expect(report.code).toBe(0);
    expect(report.out).toMatch(/^[0-9a-f-]{36}$/);
    const test = await run('--alarm', `${id}:${token}`, 'POST', '/alarm/test');
    expect(test.code).toBe(0);
    const refused = await run(
      '--alarm',
      `${id}:${wrongKey}`,
      'POST',
      '/alarm/report',
      '{"ctn":{"host":"web-1"}}',
    );
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.out)).toMatchObject({ code: 401, msg: 'signature invalid' });
  });
});
