import { createHash, randomBytes } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { importDirectory } from '../../shared/domain/directory/service.ts';
import { advanceClock } from '../support/client.ts';
import { addPeople, admin, Browser, send } from '../support/people.ts';
import { createTask } from '../support/tasks.ts';

/**
 * People signing in (docs/sign-in.md) over HTTP, against the local stack: passwords set by the
 * operator's command, sessions in an HttpOnly cookie (sign out, sign out everywhere, idle and
 * absolute expiry), lockout per account and per source address, CSRF and origin checks, hostile
 * input, and a person acting as themselves on the console's routes.
 *
 * The stack's sessions last SESSION_IDLE_MINUTES=2880 and SESSION_MAX_HOURS=168 (test/support/
 * global-setup.ts); the service's clock is moved past them. Failed sign-ins are sent from loopback
 * addresses of their own (127.0.0.21 ...): the address throttle must not reach other suites.
 */
const run = randomBytes(3).toString('hex');
const ANN = {
  uid: 8101,
  user: `ann-${run}`,
  email: `ann-${run}@example.com`,
  username: 'Ann Signin',
  role: 9,
};
const BO = { uid: 8102, user: `bo-${run}`, email: `bo-${run}@example.com`, username: 'Bo Signin' };
const CY = { uid: 8103, user: `cy-${run}`, email: `cy-${run}@example.com`, username: 'Cy Signin' };
const DI = { uid: 8104, user: `di-${run}`, email: `di-${run}@example.com`, username: 'Di Signin' };
const EL = { uid: 8105, user: `el-${run}`, email: `el-${run}@example.com`, username: 'El Signin' };
const FU = { uid: 8106, user: `fu-${run}`, email: `fu-${run}@example.com`, username: 'Fu Signin', role: 9 };
const GI = { uid: 8107, user: `gi-${run}`, email: `gi-${run}@example.com`, username: 'Gi Signin' };
const PASSWORDS = {
  [ANN.uid]: 'ann password 1',
  [BO.uid]: 'bo password 22',
  [CY.uid]: 'cy-password-333',
  [EL.uid]: 'el password 4444',
  [FU.uid]: 'fu password 55555',
  [GI.uid]: 'gi password 666666',
};

const sessionItem = async (cookie: string) =>
  (
    await db().send(
      new GetCommand({
        TableName: tableName(),
        Key: keys.session(createHash('sha256').update(cookie).digest('hex')),
        ConsistentRead: true,
      }),
    )
  ).Item;

beforeAll(async () => {
  await addPeople([
    { ...ANN, password: PASSWORDS[ANN.uid] },
    { ...BO, password: PASSWORDS[BO.uid] },
    { ...CY, password: PASSWORDS[CY.uid] },
    DI,
    { ...EL, password: PASSWORDS[EL.uid] },
    { ...FU, password: PASSWORDS[FU.uid] },
    { ...GI, password: PASSWORDS[GI.uid] },
  ]);
});

describe('passwords set by the operator', () => {
  it('reads the password from standard input, never prints it, and the person signs in with it', async () => {
    // Arrange
    const password = `piped ${run} secret`;
    // Act
    const set = await admin(['user', 'password', String(DI.uid)], `${password}\n`);
    const b = new Browser();
    const byAccount = await b.signIn(DI.user.toUpperCase(), password);
    const byEmail = await new Browser().signIn(DI.email, password);
    // Assert
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toContain(`password set for user ${DI.uid} (Di Signin)`);
    expect(set.stdout + set.stderr).not.toContain(password);
    expect(byAccount.json).toMatchObject({
      code: 0,
      data: { person: { uid: DI.uid, user: DI.user, email: DI.email, role: 0 } },
    });
    expect(byAccount.json.data.csrf_token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(byEmail.json.code).toBe(0);
  });

  it('refuses a short password and a second line, changing nothing', async () => {
    const short = await admin(['user', 'password', String(DI.uid)], 'short\n');
    const spaces = await admin(['user', 'password', String(DI.uid)], `${' '.repeat(8)}\n`);
    const common = await admin(['user', 'password', String(DI.uid)], 'password\n');
    const current = await admin(['user', 'password', String(DI.uid)], `piped ${run} secret\n`);
    const lines = await admin(['user', 'password', String(DI.uid)], 'first line here\nsecond line\n');
    const unknown = await admin(['user', 'password', '987654321'], 'long enough password\n');
    expect([short.code, short.stderr]).toEqual([1, expect.stringContaining('password: must be at least 8')]);
    expect(lines.stderr).toContain('password: must be one line');
    expect(spaces.stderr).toContain('password: must not be one character repeated');
    expect(common.stderr).toContain('password: is a common password');
    expect(current.stderr).toContain('password: must not be the current password');
    expect(unknown.stderr).toContain('user [987654321] not found');
    expect((await new Browser().signIn(DI.user, `piped ${run} secret`)).json.code).toBe(0);
  });

  it('keeps the password across a directory re-import, and --clear removes it', async () => {
    // Act: the directory is imported again (the user item is put whole)
    await importDirectory({ users: [{ ...DI, username: 'Di Renamed' }] });
    const after = await new Browser().signIn(DI.user, `piped ${run} secret`);
    const cleared = await admin(['user', 'password', String(DI.uid), '--clear']);
    const refused = await new Browser('127.0.0.24').signIn(DI.user, `piped ${run} secret`);
    // Assert
    expect(after.json.data.person.username).toBe('Di Renamed');
    expect(cleared.stdout).toContain(`password removed for user ${DI.uid}`);
    expect([refused.status, refused.json.msg]).toEqual([401, 'account or password is wrong']);
  });
});

describe('sessions', () => {
  it('sets an HttpOnly, SameSite=Strict cookie whose value the table never holds', async () => {
    // Act
    const b = new Browser();
    const answer = await b.signIn(ANN.user, PASSWORDS[ANN.uid]);
    const session = await b.send('/auth/session');
    // Assert
    const [cookie] = answer.cookies;
    expect(cookie).toMatch(
      /^tocsin_session=[A-Za-z0-9_-]{43}; Path=\/; Max-Age=604800; HttpOnly; SameSite=Strict$/,
    );
    expect(answer.headers['cache-control']).toBe('no-store');
    expect(session.json).toMatchObject({
      code: 0,
      data: { person: { uid: ANN.uid, role: 9 }, csrf_token: answer.json.data.csrf_token, sso: true },
    });
    const item = await sessionItem(b.session as string);
    expect(item).toMatchObject({ uid: ANN.uid, method: 'password' });
    expect(JSON.stringify(item)).not.toContain(b.session as string);
  });

  it('answers "nobody" to a browser without a session cookie, and 401 to one whose session ended', async () => {
    // Act
    const fresh = await new Browser().send('/auth/session');
    const stale = await send('/auth/session', { headers: { cookie: `tocsin_session=${'x'.repeat(43)}` } });
    // Assert: a visit before signing in is no refused request (the console asks on every load)
    expect([fresh.status, fresh.json]).toEqual([
      200,
      { code: 0, msg: 'success', data: { person: null, sso: true } },
    ]);
    expect([stale.status, stale.json.data.sso]).toEqual([401, true]);
  });

  it('signs out one session, or every session of the person', async () => {
    // Arrange: Bo in three browsers
    const [one, two, three] = [new Browser(), new Browser(), new Browser()];
    for (const b of [one, two, three])
      expect((await b.signIn(BO.email, PASSWORDS[BO.uid])).json.code).toBe(0);
    const cookieOfOne = one.session as string;
    // Act: sign out in the first
    const out = await one.send('/auth/signout', { json: {} });
    // Assert: that one ended (its cookie cleared, the item gone), the others stand
    expect(out.json.code).toBe(0);
    expect(out.cookies[0]).toMatch(/^tocsin_session=; Path=\/; Max-Age=0; HttpOnly; SameSite=Strict$/);
    expect(await sessionItem(cookieOfOne)).toBeUndefined();
    expect(
      (await send('/auth/session', { headers: { cookie: `tocsin_session=${cookieOfOne}` } })).status,
    ).toBe(401);
    expect((await two.send('/auth/session')).json.code).toBe(0);
    // Act: sign out everywhere from the second
    expect((await two.send('/auth/signout', { json: { everywhere: 1 } })).json.code).toBe(0);
    // Assert: the third ended too, and says so
    const ended = await three.send('/alarmtask/list');
    expect([ended.status, ended.json.msg]).toEqual([401, 'your session has ended: sign in again']);
    expect(ended.cookies[0]).toContain('Max-Age=0');
    // A new sign-in works at once
    expect((await new Browser().signIn(BO.user, PASSWORDS[BO.uid])).json.code).toBe(0);
  });

  it('lets the operator sign a person out everywhere', async () => {
    const b = new Browser();
    await b.signIn(CY.user, PASSWORDS[CY.uid]);
    const res = await admin(['user', 'signout', String(CY.uid)]);
    expect(res.stdout).toContain(`every console session of user ${CY.uid} was signed out`);
    expect((await b.send('/auth/session')).status).toBe(401);
  });

  it('changes a password with the current one: the other sessions end, this browser goes on', async () => {
    // Arrange
    const [here, there] = [new Browser(), new Browser()];
    await here.signIn(CY.user, PASSWORDS[CY.uid]);
    await there.signIn(CY.user, PASSWORDS[CY.uid]);
    // Act
    const wrong = await here.send('/auth/password', {
      method: 'PUT',
      json: { current: 'not it at all', password: 'a new one for cy' },
    });
    const tooShort = await here.send('/auth/password', {
      method: 'PUT',
      json: { current: PASSWORDS[CY.uid], password: 'short' },
    });
    const common = await here.send('/auth/password', {
      method: 'PUT',
      json: { current: PASSWORDS[CY.uid], password: 'Password' },
    });
    const same = await here.send('/auth/password', {
      method: 'PUT',
      json: { current: PASSWORDS[CY.uid], password: PASSWORDS[CY.uid] },
    });
    const changed = await here.send('/auth/password', {
      method: 'PUT',
      json: { current: PASSWORDS[CY.uid], password: 'a new one for cy' },
    });
    here.csrf = changed.json.data.csrf_token;
    // Assert
    expect([wrong.status, wrong.json.msg]).toEqual([422, 'current is not your current password']);
    expect([tooShort.status, tooShort.json.msg]).toEqual([422, 'password must be at least 8 characters']);
    expect([common.status, common.json.msg]).toEqual([
      422,
      'password is a common password (it appears in lists of breached passwords): choose another',
    ]);
    expect([same.status, same.json.msg]).toEqual([422, 'password must not be your current password']);
    expect(changed.json.code).toBe(0);
    expect((await here.send('/auth/session')).json.data.person.uid).toBe(CY.uid);
    expect((await there.send('/auth/session')).status).toBe(401);
    expect((await new Browser('127.0.0.24').signIn(CY.user, PASSWORDS[CY.uid])).status).toBe(401);
    expect((await new Browser().signIn(CY.user, 'a new one for cy')).json.code).toBe(0);
    PASSWORDS[CY.uid] = 'a new one for cy';
  });
});

describe('guessing', () => {
  it('locks an account after 5 wrong passwords: the right one is refused until the lock passes', async () => {
    // Arrange
    const b = new Browser('127.0.0.21');
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push(await b.signIn(BO.user, `wrong guess ${i}`));
    // Act
    const locked = await b.signIn(BO.user, PASSWORDS[BO.uid]);
    const lockedByEmail = await b.signIn(BO.email, PASSWORDS[BO.uid]);
    // Assert
    expect(answers.map((a) => [a.status, a.json.msg])).toEqual(
      Array(5).fill([401, 'account or password is wrong']),
    );
    expect([locked.status, locked.json.msg]).toEqual([
      429,
      'too many failed sign-ins for this account: try again in 15 minutes',
    ]);
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(800);
    expect(lockedByEmail.status).toBe(429);
    expect(locked.cookies).toEqual([]);
    // Act: the lock passes
    await advanceClock(15 * 60 + 5);
    // Assert
    expect((await b.signIn(BO.user, PASSWORDS[BO.uid])).json.code).toBe(0);
  });

  it('answers an unknown account like a wrong password, and locks it alike', async () => {
    const b = new Browser('127.0.0.22');
    const ghost = `ghost-${run}`;
    const answers = [];
    for (let i = 0; i < 6; i++) answers.push(await b.signIn(ghost, `guess ${i}`));
    expect(answers.slice(0, 5).map((a) => [a.status, a.json.msg])).toEqual(
      Array(5).fill([401, 'account or password is wrong']),
    );
    expect([answers[5].status, answers[5].json.msg]).toEqual([
      429,
      'too many failed sign-ins for this account: try again in 15 minutes',
    ]);
  });

  it('throttles a source address that fails on many accounts, and no other', async () => {
    // Arrange: 20 failures (the stack's SIGNIN_ADDRESS_MAX_FAILURES) over 5 accounts, 4 each
    const from = new Browser('127.0.0.23');
    for (let i = 0; i < 20; i++) {
      const a = await from.signIn(`nobody-${run}-${i % 5}`, 'guess');
      expect(a.status).toBe(401);
    }
    // Act
    const there = await from.signIn(ANN.user, PASSWORDS[ANN.uid]);
    const elsewhere = await new Browser('127.0.0.25').signIn(ANN.user, PASSWORDS[ANN.uid]);
    // Assert
    expect([there.status, there.json.msg]).toEqual([
      429,
      'too many failed sign-ins from this address: try again in 15 minutes',
    ]);
    expect(elsewhere.json.code).toBe(0);
    await advanceClock(15 * 60 + 5);
    expect((await from.signIn(ANN.user, PASSWORDS[ANN.uid])).json.code).toBe(0);
  });
});

describe('expiry', () => {
  it('ends a session unused for SESSION_IDLE_MINUTES, and a used one SESSION_MAX_HOURS after sign-in', async () => {
    // Arrange
    const [idle, busy] = [new Browser(), new Browser()];
    await idle.signIn(ANN.user, PASSWORDS[ANN.uid]);
    await busy.signIn(BO.user, PASSWORDS[BO.uid]);
    // Act: two days (the idle limit) less 10 minutes: both stand; the busy one is used
    await advanceClock(2880 * 60 - 600);
    expect((await busy.send('/auth/session')).json.code).toBe(0);
    await advanceClock(660);
    // Assert: the idle one ended
    const ended = await idle.send('/auth/session');
    expect([ended.status, ended.json.msg]).toEqual([401, 'your session has ended: sign in again']);
    // Act: the busy one is used every day until 7 days since sign-in have passed
    for (let day = 3; day < 7; day++) {
      await advanceClock(86_400);
      expect((await busy.send('/alarmtask/list')).json.code, `day ${day}`).toBe(0);
    }
    await advanceClock(86_400);
    // Assert
    expect((await busy.send('/alarmtask/list')).status).toBe(401);
  });
});

describe('cross-site requests', () => {
  it('refuses a change made with the cookie but without the CSRF token, or from another origin', async () => {
    // Arrange
    const b = new Browser();
    await b.signIn(BO.user, PASSWORDS[BO.uid]);
    // Act
    const noToken = await b.send('/auth/signout', { json: {}, headers: { 'x-csrf-token': '' } });
    const wrongToken = await b.send('/auth/signout', {
      json: {},
      headers: { 'x-csrf-token': 'x'.repeat(43) },
    });
    const otherOrigin = await b.send('/auth/signout', {
      json: {},
      headers: { origin: 'https://evil.example' },
    });
    const noOrigin = await send('/auth/signout', {
      json: {},
      headers: { cookie: b.jar.header(), 'x-csrf-token': b.csrf },
    });
    const signInElsewhere = await send('/auth/signin', {
      json: { account: BO.user, password: PASSWORDS[BO.uid] },
      headers: { origin: 'https://evil.example' },
    });
    // Assert: all refused, the session stands
    expect(noToken.status).toBe(403);
    expect(noToken.json.msg).toContain("lacks the session's CSRF token");
    expect(wrongToken.status).toBe(403);
    expect([otherOrigin.status, otherOrigin.json.msg]).toEqual([
      403,
      'cross-site request refused: use the console of this service',
    ]);
    expect(noOrigin.status).toBe(403);
    expect([signInElsewhere.status, signInElsewhere.cookies]).toEqual([403, []]);
    expect((await b.send('/auth/session')).json.code).toBe(0);
  });
});

describe('hostile input', () => {
  it.each<[string, Parameters<typeof send>[1], number, string]>([
    [
      'malformed JSON',
      { body: '{"account":', headers: { 'content-type': 'application/json' } },
      400,
      'request body is not valid JSON',
    ],
    [
      'a form instead of JSON',
      { body: 'account=a&password=b', headers: { 'content-type': 'application/x-www-form-urlencoded' } },
      400,
      'content type must be application/json',
    ],
    [
      'text/plain JSON (a cross-site form)',
      { body: '{"account":"a","password":"b"}', headers: { 'content-type': 'text/plain' } },
      400,
      'content type must be application/json',
    ],
    ['an array', { json: [1] }, 400, 'request body must be a JSON object'],
    ['no account', { json: { password: 'x' } }, 422, 'account is required'],
    [
      'a number as the password',
      { json: { account: 'a', password: 12345678 } },
      422,
      'password must be a string',
    ],
    [
      'an oversized password',
      { json: { account: 'a', password: 'p'.repeat(257) } },
      422,
      'password must be at most 256 characters',
    ],
    [
      'an oversized account',
      { json: { account: 'a'.repeat(255), password: 'p' } },
      422,
      'account must be at most 254 characters',
    ],
    [
      'a huge body',
      { json: { account: 'a', password: 'p', pad: 'x'.repeat(300_000) } },
      413,
      'request body too large',
    ],
  ])('refuses %s with a clear envelope and no cookie', async (_what, opts, status, msg) => {
    const res = await send('/auth/signin', { method: 'POST', from: '127.0.0.26', ...opts });
    expect([res.status, res.json.code, res.json.msg]).toEqual([status, status, msg]);
    expect(res.cookies).toEqual([]);
  });

  it.each([
    ['a forged session id', `tocsin_session=${randomBytes(32).toString('base64url')}`, 'ended'],
    ['a malformed session id', 'tocsin_session=%00%ff<script>', 'none'],
    ['an empty session id', 'tocsin_session=', 'none'],
    ['a huge cookie', `tocsin_session=${'A'.repeat(4000)}`, 'none'],
  ])('answers %s with 401, never a 5xx', async (_what, cookie, kind) => {
    const session = await send('/auth/session', { headers: { cookie } });
    const list = await send('/alarmtask/list', { headers: { cookie } });
    // A well-formed id of no session is cleared; a malformed value names none: nothing to clear.
    expect([session.status, session.json.msg]).toEqual(
      kind === 'ended' ? [401, 'your session has ended: sign in again'] : [401, 'not signed in'],
    );
    expect(session.cookies.length).toBe(kind === 'ended' ? 1 : 0);
    expect(list.status).toBe(401);
  });

  it('keeps a session whose cookie comes with a malformed or ended one of the same name', async () => {
    // Arrange: a signed-in browser, and cookies planted beside its own (as a page on another path could)
    const b = new Browser();
    await b.signIn(ANN.user, PASSWORDS[ANN.uid]);
    const real = `tocsin_session=${b.session}`;
    // Act
    const malformedFirst = await send('/auth/session', {
      headers: { cookie: `tocsin_session=<x>; ${real}` },
    });
    const endedFirst = await send('/auth/session', {
      headers: { cookie: `tocsin_session=${randomBytes(32).toString('base64url')}; ${real}` },
    });
    // Assert: the session stands, and no answer clears the cookie
    for (const res of [malformedFirst, endedFirst]) {
      expect(res.json.data.person?.uid).toBe(ANN.uid);
      expect(res.cookies).toEqual([]);
    }
    expect((await b.send('/auth/session')).status).toBe(200);
  });

  it('refuses the routes that need a person without a session', async () => {
    const res = await send('/auth/signout', { json: {} });
    expect([res.status, res.json.msg]).toEqual([401, 'not signed in']);
  });
});

describe('the console acts as the signed-in person', () => {
  let annTask: number;
  let boTask: number;
  beforeAll(async () => {
    annTask = (await createTask({ created_by: ANN.uid, receiver: { channels: { email: [ANN.uid] } } })).id;
    boTask = (
      await createTask({
        created_by: ANN.uid,
        receiver: { channels: { email: [ANN.uid] } },
        permission: { rw: [BO.uid], ro: [] },
      })
    ).id;
  });

  it('lists only the person’s tasks, whatever uid the request names', async () => {
    // Arrange
    const bo = new Browser();
    await bo.signIn(BO.user, PASSWORDS[BO.uid]);
    // Act
    const mine = await bo.send(`/alarmtask/list?uid=${ANN.uid}&limit=100`);
    const theirs = await bo.send(`/alarmtask/view?uid=${ANN.uid}&task_id=${annTask}`);
    const own = await bo.send(`/alarmtask/view?task_id=${boTask}`);
    // Assert
    const ids = (mine.json.data.tasks as { id: number }[]).map((t) => t.id);
    expect(ids).toContain(boTask);
    expect(ids).not.toContain(annTask);
    expect([theirs.status, theirs.json.msg]).toEqual([
      403,
      `user [${BO.uid}] has no permission on task [${annTask}]`,
    ]);
    expect(own.json.data.task.id).toBe(boTask);
  });

  it('gives role 9 every task and the dead letters; refuses the dead letters to anyone else', async () => {
    const ann = new Browser();
    await ann.signIn(ANN.user, PASSWORDS[ANN.uid]);
    const bo = new Browser();
    await bo.signIn(BO.user, PASSWORDS[BO.uid]);
    const all = await ann.send(`/alarmtask/view?task_id=${boTask}`);
    const dlq = await ann.send('/delivery/dlq?queue=webhook&limit=1');
    const refused = await bo.send(`/delivery/dlq?queue=webhook&uid=${ANN.uid}`);
    const redrive = await bo.send('/delivery/dlq/redrive', {
      json: { uid: ANN.uid, queue: 'webhook', all: 1 },
    });
    expect(all.json.code).toBe(0);
    expect(dlq.json.code).toBe(0);
    expect([refused.status, refused.json.msg]).toEqual([
      403,
      `user [${BO.uid}] is not a super administrator (role 9)`,
    ]);
    expect(redrive.status).toBe(403);
  });

  it('acts as the person on the interface routes the console calls (created_by is the person)', async () => {
    // Arrange: a task with a workflow, and an alarm that opens one
    const { newWorkflow } = await import('../support/workflows.ts');
    const t = await createTask({
      created_by: ANN.uid,
      receiver: { channels: { email: [ANN.uid] } },
      permission: { rw: [BO.uid], ro: [] },
      workflow: { enable: true },
    });
    const wf = await newWorkflow(t);
    const bo = new Browser();
    await bo.signIn(BO.user, PASSWORDS[BO.uid]);
    const cy = new Browser();
    await cy.signIn(CY.user, PASSWORDS[CY.uid]);
    // Act
    const claim = await bo.send('/workflow/claim', {
      method: 'PUT',
      json: { ids: [wf.id], created_by: ANN.uid },
    });
    const shown = await bo.send(`/workflow/show?id=${wf.id}`);
    const hidden = await cy.send(`/workflow/show?id=${wf.id}`);
    const departments = await cy.send('/department/simple');
    // Assert
    expect(claim.json.data.workflows).toEqual([{ id: wf.id, status: 1 }]);
    expect(shown.json.data.workflow.pipelines.at(-1)).toMatchObject({ status: 1, created_by: BO.uid });
    expect([hidden.status, hidden.json.msg]).toEqual([
      403,
      `user [${CY.uid}] has no permission on task [${t.id}]`,
    ]);
    expect(departments.json.code).toBe(0);
  });
});
