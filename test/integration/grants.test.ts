import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { importDirectory } from '../../shared/domain/directory/service.ts';
import { type AppAuth, advanceClock, api, appHeaders, boundAppHeaders } from '../support/client.ts';
import { addPeople, admin, send, until } from '../support/people.ts';
import { ADMIN_APP } from '../support/seed.ts';
import { createTask } from '../support/tasks.ts';

/**
 * What an app may do (docs/sign-in.md): every interface route, as before; the routes beyond it only
 * with a grant given by the operator (`npm run admin -- app grant APP read|admin`). A grant reaches
 * each running function within the app cache time (30 s of service time; each function caches the
 * app on its own): after a change the test clock passes it, and the checks poll the route they check.
 */
const run = randomBytes(3).toString('hex');
const ADMIN = 1;
const PREFIX = `grants-${run}`;
const PAL = { uid: 8201, user: `pal-${run}`, email: `pal-${run}@example.com`, username: 'Pal Grants' };

async function createApp(): Promise<AppAuth> {
  const res = await admin(['app', 'create', `grants-${run}`]);
  const id = Number(/id:\s+(\d+)/.exec(res.stdout)?.[1]);
  const token = /token:\s+([0-9a-f]{40})/.exec(res.stdout)?.[1];
  if (res.code !== 0 || !id || !token) throw new Error(`app create failed: ${res.stderr}`);
  return { id, token };
}

let app: AppAuth;
let palTask: number;
let otherTask: number;

beforeAll(async () => {
  await addPeople([PAL]);
  app = await createApp();
  // Named after the run: the listings below search for them (the table holds every suite's tasks, far
  // more than a page).
  palTask = (await createTask({ name: `${PREFIX}-pal`, permission: { rw: [], ro: [PAL.uid] } })).id;
  otherTask = (await createTask({ name: `${PREFIX}-other` })).id;
});

/** Moves the service clock past the app cache time, so every function reads the app's change. */
const passAppCache = () => advanceClock(31);

/** The other task's status, as the super administrator sees it. */
const taskStatus = async () =>
  (await api.get('/alarmtask/view', { query: { uid: ADMIN, task_id: otherTask }, app: ADMIN_APP })).data.task
    .status;
const dlq = () => api.get('/delivery/dlq', { query: { uid: ADMIN, queue: 'webhook', limit: 1 }, app });
/** The tasks of this file the app lists as `uid` (every one of them fits in a page). */
const listAs = (uid: number, as: AppAuth = app) =>
  api.get<{ tasks: { id: number }[] }>('/alarmtask/list', { query: { uid, q: PREFIX, limit: 100 }, app: as });

describe('app grants', () => {
  it('leaves the interface routes to every app, and refuses the others naming the missing grant', async () => {
    // Act
    const departments = await api.get('/department/simple', { app });
    const profile = await api.get('/user/profile', { query: { uid: PAL.uid }, app });
    const letters = await dlq();
    const list = await listAs(ADMIN);
    const redrive = await api.post(
      '/delivery/dlq/redrive',
      { uid: ADMIN, queue: 'webhook', all: 1 },
      { app },
    );
    // Assert
    expect(departments.code).toBe(0);
    expect(profile.data.permission.read).toContain(palTask);
    expect([letters.status, letters.msg]).toEqual([
      403,
      `app [${app.id}] lacks the grant [admin]: an operator gives it with npm run admin -- app grant ${app.id} admin`,
    ]);
    expect([list.status, list.msg]).toEqual([
      403,
      `app [${app.id}] lacks the grant [read]: an operator gives it with npm run admin -- app grant ${app.id} read`,
    ]);
    expect(redrive.status).toBe(403);
  });

  it('opens the dead letters and every task after `app grant APP admin`', async () => {
    // Act
    const granted = await admin(['app', 'grant', String(app.id), 'admin']);
    await passAppCache();
    const letters = await until('the grant to reach the dead letters', async () => {
      const res = await dlq();
      return res.status === 200 ? res : undefined;
    });
    const asPal = await until('the grant to reach the listing', async () => {
      const res = await listAs(PAL.uid);
      return res.status === 200 ? res : undefined;
    });
    // Assert
    expect(granted.stdout).toContain(`app ${app.id}: grants admin`);
    expect(letters.code).toBe(0);
    const ids = asPal.data.tasks.map((t) => t.id);
    // The super administrator's powers, whoever the app names.
    expect(ids).toEqual(expect.arrayContaining([palTask, otherTask]));
  });

  it('keeps the grants across a directory re-import that names the app', async () => {
    await importDirectory({ apps: [{ id: app.id, name: `renamed-${run}`, token: app.token }] });
    const again = await admin(['app', 'grant', String(app.id), 'read']);
    await passAppCache();
    expect(again.stdout).toContain(`app ${app.id}: grants admin, read`);
  });

  it('reads within the named user’s permissions with `read` alone; revoking shuts the routes again', async () => {
    // Act
    const revoked = await admin(['app', 'revoke', String(app.id), 'admin']);
    await passAppCache();
    const refused = await until('the revocation to reach the dead letters', async () => {
      const res = await dlq();
      return res.status === 403 ? res : undefined;
    });
    // Each route's function keeps the app in a cache of its own: each sees the revocation in its time.
    const asPal = await until('the revocation to reach the listing', async () => {
      const res = await listAs(PAL.uid);
      return res.status === 200 && !res.data.tasks.some((t) => t.id === otherTask) ? res : undefined;
    });
    const view = await until('the revocation to reach the task view', async () => {
      const res = await api.get('/alarmtask/view', { query: { uid: PAL.uid, task_id: otherTask }, app });
      return res.status === 200 ? undefined : res;
    });
    // Assert
    expect(refused.msg).toContain('lacks the grant [admin]');
    expect(revoked.stdout).toContain(`app ${app.id}: grants read`);
    const ids = asPal.data.tasks.map((t) => t.id);
    expect(ids).toContain(palTask);
    expect(ids).not.toContain(otherTask);
    expect([view.status, view.msg]).toEqual([
      403,
      `user [${PAL.uid}] has no permission on task [${otherTask}]`,
    ]);
    // Act: the last grant goes
    await admin(['app', 'revoke', String(app.id), 'read']);
    await passAppCache();
    const shut = await until('the last revocation to take effect', async () => {
      const res = await listAs(PAL.uid);
      return res.status === 403 ? res : undefined;
    });
    expect(shut.msg).toContain('lacks the grant [read]');
  }, 120_000); // two changes, each up to a cache time (30 s) to reach every function

  it('refuses an unknown grant or app at the command line', async () => {
    const bogus = await admin(['app', 'grant', String(app.id), 'root']);
    const unknown = await admin(['app', 'grant', '99999999999', 'read']);
    expect([bogus.code, bogus.stderr]).toEqual([
      1,
      expect.stringContaining('grant: must be read, operate or admin'),
    ]);
    expect(unknown.stderr).toContain('app [99999999999] not found');
  });
});

describe('grants that change things, and apps bound to users', () => {
  let reader: AppAuth;
  beforeAll(async () => {
    reader = await createApp();
    await admin(['app', 'grant', String(reader.id), 'read']);
    await passAppCache();
  });
  const status = (uid: number, action: 'stop' | 'start') =>
    api.put('/alarmtask/status', { uid, task_id: otherTask, action }, { app: reader });

  it('refuses a `read` app naming the super administrator on PUT /alarmtask/status and the webhook test-send', async () => {
    // Act: the review's attack: a read-only app names uid 1 (role 9, learnt from /user/profile)
    const stop = await until('the read grant to reach the status route', async () => {
      const res = await status(ADMIN, 'stop');
      return res.status === 401 ? undefined : res;
    });
    const ping = await api.post(
      '/alarmtask/webhook/test',
      { uid: ADMIN, task_id: otherTask },
      { app: reader },
    );
    // Assert: nothing changed
    expect([stop.status, stop.msg]).toEqual([
      403,
      `app [${reader.id}] lacks the grant [operate]: an operator gives it with npm run admin -- app grant ${reader.id} operate`,
    ]);
    expect([ping.status, ping.msg]).toEqual([403, expect.stringContaining('lacks the grant [operate]')]);
    expect(await taskStatus()).toBe(1);
  });

  it('lets an `operate` app change what the named user may change, and nothing else', async () => {
    // Act
    await admin(['app', 'grant', String(reader.id), 'operate']);
    await passAppCache();
    const stopped = await until('the operate grant to reach the status route', async () => {
      const res = await status(ADMIN, 'stop');
      return res.status === 200 ? res : undefined;
    });
    const asPal = await api.put(
      '/alarmtask/status',
      { uid: PAL.uid, task_id: palTask, action: 'stop' },
      { app: reader },
    );
    // Assert
    expect(stopped.data).toEqual({ id: otherTask });
    expect(await taskStatus()).toBe(0);
    expect([asPal.status, asPal.msg]).toEqual([
      403,
      `user [${PAL.uid}] has read-only permission on task [${palTask}]`,
    ]);
    expect((await status(ADMIN, 'start')).code).toBe(0);
  }, 90_000);

  it('lets a bound app act only as the users it is bound to (`app bind`), until it is unbound', async () => {
    // Act
    const bound = await admin(['app', 'bind', String(reader.id), String(PAL.uid)]);
    await passAppCache();
    const refused = await until('the binding to reach the listing', async () => {
      const res = await listAs(ADMIN, reader);
      return res.status === 403 ? res : undefined;
    });
    const asPal = await listAs(PAL.uid, reader);
    // Assert
    expect(bound.stdout).toContain(`app ${reader.id}: acts only as users ${PAL.uid}`);
    expect(refused.msg).toBe(
      `app [${reader.id}] may not act as user [${ADMIN}]: it acts only for the users it is bound to`,
    );
    expect(asPal.status).toBe(200);
    // Act: unbound
    await admin(['app', 'unbind', String(reader.id)]);
    await passAppCache();
    const free = await until('the unbinding to reach the listing', async () => {
      const res = await listAs(ADMIN, reader);
      return res.status === 200 ? res : undefined;
    });
    expect(free.code).toBe(0);
  }, 90_000);

  it('reads a uid only as decimal digits: 0x1 is refused with 422', async () => {
    const hex = await api.get('/alarmtask/list', { query: { uid: '0x1', q: PREFIX }, app: ADMIN_APP });
    const spaced = await api.get('/alarmtask/list', { query: { uid: ' 1', q: PREFIX }, app: ADMIN_APP });
    const exp = await api.get('/alarmtask/list', { query: { uid: '1e0', q: PREFIX }, app: ADMIN_APP });
    for (const res of [hex, spaced, exp]) {
      expect([res.status, res.code, res.data.errors]).toEqual([
        422,
        422,
        [{ field: 'uid', message: 'must be an integer' }],
      ]);
    }
  });
});

describe('the request-bound app signature', () => {
  let bound: AppAuth;
  beforeAll(async () => {
    bound = await createApp();
    await admin(['app', 'grant', String(bound.id), 'admin']);
    await passAppCache();
    const opted = await admin(['app', 'signature', String(bound.id), 'request']);
    await passAppCache();
    expect(opted.stdout).toContain('every request must carry the request-bound signature');
  });

  it('refuses the interface signature of an app that opted in', async () => {
    const fixed = await until('the opt-in to reach the route', async () => {
      const res = await api.get('/department/simple', { app: { ...bound, scheme: 'hmac' } });
      return res.status === 401 ? res : undefined;
    });
    expect(fixed.msg).toBe(
      `app [${bound.id}] must sign its requests bound to them (X-App-Nonce, API guide §3.1.1)`,
    );
    expect((await api.get('/department/simple', { app: bound })).code).toBe(0);
  });

  it('refuses a signature reused on another route, and the same request twice', async () => {
    // Arrange: the headers of a GET /department/simple, captured
    const path = '/department/simple';
    const captured = await boundAppHeaders(bound, { method: 'GET', path, rawQuery: '', body: '' });
    const first = await send(path, { headers: captured });
    // Act: replayed on a route that stops a task, and as they were
    const body = JSON.stringify({ uid: ADMIN, task_id: otherTask, action: 'stop' });
    const moved = await send('/alarmtask/status', {
      method: 'PUT',
      headers: { ...captured, 'content-type': 'application/json' },
      body,
    });
    const again = await send(path, { headers: captured });
    // A signature made for one body, sent with another
    const signed = await boundAppHeaders(bound, {
      method: 'PUT',
      path: '/alarmtask/status',
      rawQuery: '',
      body: JSON.stringify({ uid: ADMIN, task_id: otherTask, action: 'start' }),
    });
    const swapped = await send('/alarmtask/status', {
      method: 'PUT',
      headers: { ...signed, 'content-type': 'application/json' },
      body,
    });
    // Assert
    expect(first.json.code).toBe(0);
    expect([moved.status, moved.json.msg]).toEqual([401, 'signature invalid']);
    expect([again.status, again.json.msg]).toEqual([401, 'signature was already used']);
    expect([swapped.status, swapped.json.msg]).toEqual([401, 'signature invalid']);
    expect(await taskStatus()).toBe(1);
  });

  it('binds the query: a parameter changed after signing is refused', async () => {
    const signed = await boundAppHeaders(bound, {
      method: 'GET',
      path: '/alarmtask/list',
      rawQuery: `uid=${PAL.uid}&q=${PREFIX}`,
      body: '',
    });
    const changed = await send(`/alarmtask/list?uid=${ADMIN}&q=${PREFIX}`, { headers: signed });
    const reordered = await send(`/alarmtask/list?q=${PREFIX}&uid=${PAL.uid}`, { headers: signed });
    expect([changed.status, changed.json.msg]).toEqual([401, 'signature invalid']);
    // The query is signed sorted: the order the client sends it in does not matter.
    expect(reordered.json.code).toBe(0);
  });
});

describe('answers', () => {
  it('carry no-store and nosniff, and no HSTS over the local plain HTTP', async () => {
    for (const path of ['/department/simple', '/alarmtask/list?uid=1', '/no/such/route']) {
      const res = await send(path, { headers: await appHeaders(ADMIN_APP) });
      expect(res.headers['cache-control'], path).toBe('no-store');
      expect(res.headers['x-content-type-options'], path).toBe('nosniff');
      expect(res.headers['strict-transport-security'], path).toBeUndefined();
    }
  });
});
