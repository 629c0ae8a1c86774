import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { importDirectory } from '../../shared/domain/directory/service.ts';
import { type AppAuth, api } from '../support/client.ts';
import { addPeople, admin, until } from '../support/people.ts';
import { createTask } from '../support/tasks.ts';

/**
 * What an app may do (docs/sign-in.md): every interface route, as before; the routes beyond it only
 * with a grant given by the operator (`npm run admin -- app grant APP read|admin`). A grant reaches
 * each running function within the app cache time (30 s; each function caches the app on its own),
 * so the checks after a change poll the route they check.
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

const dlq = () => api.get('/delivery/dlq', { query: { uid: ADMIN, queue: 'webhook', limit: 1 }, app });
/** The tasks of this file the app lists as `uid` (every one of them fits in a page). */
const listAs = (uid: number) =>
  api.get<{ tasks: { id: number }[] }>('/alarmtask/list', { query: { uid, q: PREFIX, limit: 100 }, app });

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
    expect(again.stdout).toContain(`app ${app.id}: grants admin, read`);
  });

  it('reads within the named user’s permissions with `read` alone; revoking shuts the routes again', async () => {
    // Act
    const revoked = await admin(['app', 'revoke', String(app.id), 'admin']);
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
    const shut = await until('the last revocation to take effect', async () => {
      const res = await listAs(PAL.uid);
      return res.status === 403 ? res : undefined;
    });
    expect(shut.msg).toContain('lacks the grant [read]');
  }, 120_000); // two changes, each up to a cache time (30 s) to reach every function

  it('refuses an unknown grant or app at the command line', async () => {
    const bogus = await admin(['app', 'grant', String(app.id), 'root']);
    const unknown = await admin(['app', 'grant', '99999999999', 'read']);
    expect([bogus.code, bogus.stderr]).toEqual([1, expect.stringContaining('grant: must be read or admin')]);
    expect(unknown.stderr).toContain('app [99999999999] not found');
  });
});
