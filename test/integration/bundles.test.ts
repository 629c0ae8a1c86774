import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { type CachedBundles, cachedBundles, deployedEntries } from '../../infra/bundles.ts';
import { type RouteDef, routeEntry, routes } from '../../infra/definitions.ts';
import { routeName } from '../../scripts/gen-events.ts';
import { nowSeconds } from '../../shared/clock.ts';
import { getAlarmRecord } from '../../shared/domain/alarms/repository.ts';
import { editedConfig } from '../../shared/domain/replay/config.ts';
import { putReplay } from '../../shared/domain/replay/repository.ts';
import type { Task } from '../../shared/domain/tasks/model.ts';
import { getTask } from '../../shared/domain/tasks/repository.ts';
import { handlerOf, signEvent } from '../../shared/local/invoke.ts';
import { BUNDLE_DIR_VARIABLE, handlerModule, lambdaContext, loadHandler } from '../../shared/local/lambda.ts';
import { projectRoot } from '../../shared/local/paths.ts';
import { linkKey, mintClaimToken, pageNonce } from '../../shared/domain/auth/claim-token.ts';
import { hmacSign } from '../../shared/domain/auth/signature.ts';
import { api, baseUrl, taskAuth } from '../support/client.ts';
import { FakeClient } from '../support/fakes.ts';
import { TestReceiver } from '../support/receiver.ts';
import { addPeople, Browser, Jar, signInAtProvider } from '../support/people.ts';
import { ADMIN_APP, TEST_APP } from '../support/seed.ts';
import { createSchedule } from '../support/schedules.ts';
import { type CreatedTask, createTask } from '../support/tasks.ts';
import { newWorkflow, syncClock } from '../support/workflows.ts';
import {
  type App,
  admin,
  createApp,
  createWebhookTask,
  reportAlarm,
  startChildStack,
} from './local-child-stack.ts';

/**
 * What deploys is what is tested: every function's bundle, built as the CDK builds it
 * (infra/bundles.ts, cached while no input changes), is loaded through the local runtime's bundle mode
 * (shared/local/lambda.ts) and answers its sample event from events/, against the test stack's table
 * and queues and the seeded directory and app. The signatures are put in as `npm run invoke` does.
 */
const execFileP = promisify(execFile);
let bundles: CachedBundles;
const receiver = new TestReceiver();
const fakes = new FakeClient(inject('fakes').url);

beforeAll(async () => {
  await receiver.start();
  bundles = await cachedBundles();
  // As the local stack in bundle mode: the handlers come from the bundles, with the stack's settings.
  Object.assign(process.env, inject('fakes').env, {
    [BUNDLE_DIR_VARIABLE]: bundles.dir,
    BLOCK_PRIVATE_WEBHOOKS: '0',
  });
  // The bundles read the test stack's clock (other suites may have moved it).
  await syncClock();
}, 900_000);
afterAll(async () => {
  delete process.env[BUNDLE_DIR_VARIABLE];
  await receiver.stop();
});

const sample = (file: string) => JSON.parse(readFileSync(join(projectRoot, 'events', file), 'utf8'));

async function invoke(entry: string, event: unknown) {
  const handler = await loadHandler(entry);
  return handler(event, lambdaContext(`tocsin-bundle-${randomUUID().slice(0, 8)}`));
}

/** A task of the test's own, its webhook the test's receiver, workflows on, the fixed signature allowed. */
async function ownTask(): Promise<CreatedTask> {
  const task = await createTask({
    workflow: { enable: true, reminds: [] },
    receiver: { channels: { email: [1], webhook: receiver.url } },
  });
  const res = await api.put('/alarmtask/intake', { ...(await taskAuth(task)), fixed_sign: 1 });
  if (res.code !== 0) throw new Error(`fixed_sign: ${res.code} ${res.msg}`);
  return task;
}

// biome-ignore lint/suspicious/noExplicitAny: an event read from a file
type Event = Record<string, any>;

interface Targets {
  task: number;
  workflow: number;
  uuid: string;
  /** A finished replay of the task (GET /alarmtask/replay). */
  replay?: string;
}

/**
 * The sample's references to task 1, workflow 1 and its alarm pointed at the test's own, and a task
 * name made unique (names are unique across the service); the rest as generated.
 */
function retarget(event: Event, to: Targets): Event {
  const out = structuredClone(event);
  const fix = (o: Record<string, unknown>) => {
    if ('task_id' in o) o.task_id = typeof o.task_id === 'string' ? String(to.task) : to.task;
    if ('task_ids' in o) o.task_ids = String(to.task);
    if ('uuid' in o) o.uuid = to.uuid;
    if (Array.isArray(o.ids)) o.ids = [to.workflow];
    if ('replay_id' in o && to.replay) o.replay_id = to.replay;
    if (typeof o.name === 'string') o.name = `${o.name}-${randomUUID().slice(0, 8)}`;
  };
  if (out.queryStringParameters) {
    fix(out.queryStringParameters);
    if (out.rawPath === '/workflow/show') out.queryStringParameters.id = String(to.workflow);
    out.rawQueryString = new URLSearchParams(out.queryStringParameters).toString();
  }
  if (out.body && String(out.headers?.['content-type']).startsWith('application/json')) {
    const body = JSON.parse(out.body);
    fix(body);
    out.body = JSON.stringify(body);
  }
  return out;
}

/** An alarm of the task, reported and processed by the test stack; its uuid. */
async function processedAlarm(task: CreatedTask): Promise<string> {
  const ts = nowSeconds();
  const res = await api.post(
    '/alarm/report',
    { taskid: task.id, timestamp: ts, sign: hmacSign(task.token, task.id, ts), ctn: { host: 'web-1' } },
    { app: null },
  );
  const uuid = res.data.uuid as string;
  for (let i = 0; i < 300 && !(await getAlarmRecord(task.id, uuid)); i++)
    await new Promise((r) => setTimeout(r, 50));
  return uuid;
}

/** A finished what-if replay of the task's last alarm (answered at once); its id. */
async function replayOf(task: CreatedTask): Promise<string> {
  const res = await api.post('/alarmtask/replay', { uid: 1, task_id: task.id, last: 1 });
  if (res.code !== 0) throw new Error(`replay: ${res.code} ${res.msg}`);
  return res.data.replay_id as string;
}

/**
 * What a sample needs to be taken (code 0) rather than refused for the state of a fresh task: the
 * state the request changes from.
 */
const before: Record<string, (task: CreatedTask, workflow: number) => Promise<unknown>> = {
  PutAlarmtaskStart: async (task) => api.put('/alarmtask/stop', await taskAuth(task)),
  GetAlarmHeartbeat: async (task) =>
    api.put('/alarmtask/heartbeat', { ...(await taskAuth(task)), interval: 10 }),
  PostAlarmHeartbeat: async (task) =>
    api.put('/alarmtask/heartbeat', { ...(await taskAuth(task)), interval: 10 }),
  PutWorkflowProcessed: (_task, id) => api.put('/workflow/claim', { ids: [id], created_by: 1 }),
  PutWorkflowReactive: (_task, id) => api.put('/workflow/close', { ids: [id], created_by: 1, remark: 'x' }),
};

/** The routes whose answer is a document, not the envelope. */
const RAW = new Set(['GetOpenapiJson', 'GetDocs', 'GetConsole']);

// ---- The sign-in routes: their samples carry placeholders (an account, a password, a session cookie
// and its CSRF token, an OpenID Connect code and state); each is made real for a person of the test's
// own, whose password is set as the operator sets it.

const run = randomUUID().slice(0, 8);
let nextUid = 8601;

interface SignedInPerson {
  user: string;
  email: string;
  password: string;
  browser: Browser;
}

/** A new directory person with a password, signed in through the test stack (cookie and CSRF token). */
async function signedInPerson(): Promise<SignedInPerson> {
  const uid = nextUid++;
  const person = { uid, user: `bundle-${run}-${uid}`, email: `bundle-${run}-${uid}@example.com` };
  const password = `bundle password ${randomUUID()}`;
  await addPeople([{ ...person, username: `Bundle ${uid}`, password }]);
  const browser = new Browser();
  const answer = await browser.signIn(person.user, password);
  if (answer.json.code !== 0) throw new Error(`sign-in failed: ${answer.text}`);
  return { ...person, password, browser };
}

/** The event with the person's real session cookie and CSRF token in place of the placeholders. */
function withSession(event: Event, p: SignedInPerson): Event {
  const out = structuredClone(event);
  out.cookies = [`__Host-tocsin_session=${p.browser.session}`];
  if (out.headers['x-csrf-token']) out.headers['x-csrf-token'] = p.browser.csrf;
  return out;
}

const jsonBody = (event: Event, body: Record<string, unknown>): Event => ({
  ...event,
  body: JSON.stringify({ ...JSON.parse(event.body), ...body }),
});

/**
 * The event as the test stack's own API would hand it over (http://127.0.0.1:port, the local
 * runtime's request context): the single sign-on callback registered at the test provider is the
 * stack's.
 */
function atStack(event: Event): Event {
  const host = new URL(baseUrl()).host;
  const out = structuredClone(event);
  out.headers.host = host;
  out.requestContext = { ...out.requestContext, domainName: host, apiId: 'local' };
  return out;
}

const setCookies = (res: { cookies?: string[] }) => res.cookies ?? [];

/** GET /auth/oidc/start run from its bundle: the provider's authorization URL and the state cookie. */
async function ssoStart(route: RouteDef): Promise<{ location: string; state: string }> {
  const res = await invoke(routeEntry(route), atStack(sample('http/GetAuthOidcStart.json')));
  const state = /^tocsin_oidc=([A-Za-z0-9_-]+);/.exec(setCookies(res).join('\n'))?.[1];
  if (res.statusCode !== 303 || !state) throw new Error(`sso start: ${res.statusCode} ${res.body}`);
  return { location: res.headers.location, state };
}

// biome-ignore lint/suspicious/noExplicitAny: a handler's result
type Check = (res: Record<string, any>) => void;
const takenWithCode0: Check = (res) => {
  expect(res.statusCode, String(res.body).slice(0, 300)).toBe(200);
  expect(JSON.parse(res.body), res.body).toMatchObject({ code: 0 });
};

/** How each sign-in route's sample is made real, and what its answer must be. */
/** A claim link of the test's workflow for uid 1 by e-mail, signed as the stack signs its links. */
function claimLinkOf(workflow: number): { token: string; nonce: string } {
  const key = linkKey(Buffer.from(inject('stack').sealKey, 'base64'), 1);
  const token = mintClaimToken(
    { workflowId: workflow, round: 0, uid: 1, channel: 'email', expiresAt: nowSeconds() + 3600 },
    key,
  );
  return { token, nonce: pageNonce(token, key, nowSeconds()) };
}

const personal: Record<string, (event: Event, route: RouteDef, workflow: number) => Promise<[Event, Check]>> = {
  // The claim page and its form, for a real link of the test's workflow (the samples hold placeholders).
  GetClaim: async (event, _route, workflow) => {
    const out = atStack(event);
    const { token } = claimLinkOf(workflow);
    out.queryStringParameters = { t: token };
    out.rawQueryString = `t=${token}`;
    return [
      out,
      (res) => {
        expect(res.statusCode, String(res.body).slice(0, 300)).toBe(200);
        expect(res.headers['content-type']).toMatch(/^text\/html/);
        expect(res.headers['cache-control']).toBe('no-store');
        expect(String(res.body)).toContain('Claim as');
      },
    ];
  },
  PostClaim: async (event, _route, workflow) => {
    const out = atStack(event);
    const { token, nonce } = claimLinkOf(workflow);
    out.body = new URLSearchParams({ t: token, n: nonce }).toString();
    return [
      out,
      (res) => {
        expect(res.statusCode, String(res.body).slice(0, 300)).toBe(200);
        expect(String(res.body)).toContain('claimed');
      },
    ];
  },
  PostAuthSignin: async (event) => {
    const p = await signedInPerson();
    return [
      jsonBody(event, { account: p.user, password: p.password }),
      (res) => {
        takenWithCode0(res);
        expect(JSON.parse(res.body).data.person.user).toBe(p.user);
        expect(setCookies(res).join('\n')).toMatch(
          /^__Host-tocsin_session=[A-Za-z0-9_-]+; .*HttpOnly; SameSite=Strict; Secure$/m,
        );
      },
    ];
  },
  GetAuthSession: async (event) => {
    const p = await signedInPerson();
    return [
      withSession(event, p),
      (res) => {
        takenWithCode0(res);
        expect(JSON.parse(res.body).data).toMatchObject({
          person: { user: p.user },
          csrf_token: p.browser.csrf,
        });
      },
    ];
  },
  PostAuthSignout: async (event) => {
    const p = await signedInPerson();
    return [
      withSession(event, p),
      (res) => {
        takenWithCode0(res);
        expect(setCookies(res).join('\n')).toMatch(/^__Host-tocsin_session=; .*Max-Age=0/m);
      },
    ];
  },
  PutAuthPassword: async (event) => {
    const p = await signedInPerson();
    const password = `bundle new password ${randomUUID()}`;
    return [
      jsonBody(withSession(event, p), { current: p.password, password }),
      (res) => {
        takenWithCode0(res);
        expect(setCookies(res).join('\n')).toMatch(/^__Host-tocsin_session=[A-Za-z0-9_-]+; /m);
      },
    ];
  },
  // Single sign-on is configured on the test stack (and so in this worker) against the test provider
  // (test/support/oidc.ts): the start sends the browser there with a state cookie.
  GetAuthOidcStart: async (event) => [
    atStack(event),
    (res) => {
      expect(res.statusCode, String(res.body)).toBe(303);
      const to = new URL(res.headers.location);
      expect(to.origin).toBe(inject('oidc').issuer);
      expect(to.searchParams.get('redirect_uri')).toBe(`${baseUrl()}/auth/oidc/callback`);
      expect(setCookies(res).join('\n')).toMatch(/^tocsin_oidc=[A-Za-z0-9_-]{43}; /m);
    },
  ],
  // The whole flow: the start (from its bundle), the provider's sign-in as the person's e-mail, and
  // the callback with the code and state the provider sends back: the person is signed in.
  GetAuthOidcCallback: async (event, route) => {
    const p = await signedInPerson();
    const start = routes.find((r) => r.path === '/auth/oidc/start') ?? route;
    const { location, state } = await ssoStart(start);
    const back = new URL(await signInAtProvider(location, p.email, new Jar()));
    const out = atStack(event);
    out.queryStringParameters = Object.fromEntries(back.searchParams);
    out.rawQueryString = back.search.slice(1);
    out.cookies = [`tocsin_oidc=${state}`];
    return [
      out,
      (res) => {
        expect(res.statusCode, String(res.body)).toBe(303);
        expect(res.headers.location).toBe(`${baseUrl()}/console`);
        expect(setCookies(res).join('\n')).toMatch(/^tocsin_session=[A-Za-z0-9_-]+; /m);
      },
    ];
  },
};

// ---- The schedule routes: their samples name schedule 1; each runs on a schedule of its own (an
// override to remove, a feed key to read with), with times moved to the service's now.

/** The event's schedule parameters made real: in the query, the JSON body or the form body. */
function onSchedule(event: Event, values: Record<string, string | number>): Event {
  const out = structuredClone(event);
  const set = (o: Record<string, unknown>, asText: boolean) => {
    for (const [k, v] of Object.entries(values)) if (k in o) o[k] = asText ? String(v) : v;
  };
  if (out.queryStringParameters) {
    set(out.queryStringParameters, true);
    out.rawQueryString = new URLSearchParams(out.queryStringParameters).toString();
  }
  const type = String(out.headers?.['content-type']);
  if (out.body && type.startsWith('application/json')) {
    const body = JSON.parse(out.body);
    set(body, false);
    out.body = JSON.stringify(body);
  } else if (out.body && type.startsWith('application/x-www-form-urlencoded')) {
    const form = Object.fromEntries(new URLSearchParams(out.body));
    set(form, true);
    out.body = new URLSearchParams(form).toString();
  }
  return out;
}

async function scheduleSample(event: Event, route: RouteDef, name: string): Promise<[Event, Check]> {
  const now = nowSeconds();
  const { id } = await createSchedule();
  const values: Record<string, string | number> = {
    id,
    effective_from: now + 86_400,
    start: now + 3600,
    end: now + 7200,
  };
  if (name === 'DeleteScheduleOverride') {
    const o = await api.post('/schedule/override', {
      uid: 1,
      id,
      start: now + 3600,
      end: now + 7200,
      user: 2,
    });
    values.override_id = o.data.override.id;
  }
  // Signed again: the request-bound signature covers the query and the body as they now are.
  const made = (e: Event) =>
    signEvent(onSchedule(e, values), route, { app: [TEST_APP.id, TEST_APP.token] }, now);
  if (name === 'GetScheduleIcalIcs') {
    values.key = (await api.put('/schedule/ical', { uid: 1, id })).data.key;
    return [
      made(event),
      (res) => {
        expect(res.statusCode, String(res.body).slice(0, 300)).toBe(200);
        expect(String(res.body)).toMatch(/^BEGIN:VCALENDAR\r\n/);
      },
    ];
  }
  return [made(event), takenWithCode0];
}
for (const name of [
  'GetScheduleShow',
  'PutScheduleUpdate',
  'DeleteSchedule',
  'PostScheduleOverride',
  'DeleteScheduleOverride',
  'GetScheduleOncall',
  'GetScheduleFinal',
  'PostSchedulePreview',
  'PutScheduleIcal',
  'GetScheduleIcalIcs',
]) {
  personal[name] = (event, route) => scheduleSample(event, route, name);
}

describe('the deployed bundles', () => {
  it('are every deployed function, each run from its bundle', () => {
    const entries = deployedEntries().map((e) => e.entry);
    expect(Object.keys(bundles.entries).sort()).toEqual([...entries].sort());
    for (const entry of entries) expect(handlerModule(entry).startsWith(bundles.dir)).toBe(true);
    // A route the stack does not deploy runs from its source.
    expect(handlerModule('shared/local/clock-routes.ts')).toBe(
      join(projectRoot, 'shared/local/clock-routes.ts'),
    );
  });

  const deployed = routes.filter((r) => !r.localOnly);
  it.each(deployed.map((r) => [routeName(r), r] as const))(
    '%s takes its sample event',
    async (name, route) => {
      const task = await ownTask();
      const workflow = await newWorkflow(task);
      const uuid = name.startsWith('GetAlarmtaskAlarm') ? await processedAlarm(task) : randomUUID();
      const replay = name === 'GetAlarmtaskReplay' ? await replayOf(task) : undefined;
      await before[name]?.(task, workflow.id);
      // The dead letters are an `admin` route: the app holding that grant calls them.
      const app = route.auth === 'admin' ? ADMIN_APP : TEST_APP;
      let event = signEvent(
        retarget(sample(`http/${name}.json`), { task: task.id, workflow: workflow.id, uuid, replay }),
        route,
        { app: [app.id, app.token], task: [task.id, task.secret], alarm: [task.id, task.token] },
        nowSeconds(),
      );
      let check: Check = RAW.has(name)
        ? (res) => expect(res.statusCode, String(res.body).slice(0, 300)).toBe(200)
        : takenWithCode0;
      if (personal[name]) [event, check] = await personal[name](event, route, workflow.id);
      check(await invoke(routeEntry(route), event));
    },
  );

  it('the alarm consumer processes its sample batch: the alarm reaches the task webhook', async () => {
    const task = await ownTask();
    const event = sample('sqs/process-alarm.json');
    const message = JSON.parse(event.Records[0].body);
    Object.assign(message, {
      task_id: task.id,
      uuid: randomUUID(),
      notice_time: nowSeconds(),
      reported_at: nowSeconds(),
    });
    event.Records[0].body = JSON.stringify(message);
    const res = await invoke(handlerOf('process-alarm').file, event);
    expect(res).toEqual({ batchItemFailures: [] });
    expect((await getAlarmRecord(task.id, message.uuid))?.uuid).toBe(message.uuid);
    await receiver.waitFor((all) => all.some((r) => r.json?.data?.history?.uuid === message.uuid));
  });

  it('the webhook consumer delivers its sample event to the task webhook', async () => {
    const task = await ownTask();
    const event = sample('sqs/deliver-webhook.json');
    const message = JSON.parse(event.Records[0].body);
    const eventId = `${task.id}:sample:${randomUUID()}`;
    message.task_id = task.id;
    message.created_at = nowSeconds();
    message.events[0].event_id = eventId;
    event.Records[0].body = JSON.stringify(message);
    const res = await invoke(handlerOf('deliver-webhook').file, event);
    expect(res).toEqual({ batchItemFailures: [] });
    const got = await receiver.waitFor((all) => all.some((r) => r.headers['webhook-id'] === eventId));
    expect(got.find((r) => r.headers['webhook-id'] === eventId)?.json).toMatchObject({ event: 'PING' });
  });

  it('the replay consumer runs the replay its sample names', async () => {
    // Arrange: a replay waiting for the queue, as POST /alarmtask/replay leaves one (a window too
    // large to answer at once; here the task's last alarm)
    const task = await ownTask();
    await processedAlarm(task);
    const replayId = randomUUID();
    const now = nowSeconds();
    const { fingerprint } = editedConfig((await getTask(task.id, true)) as Task, undefined);
    await putReplay({
      replay_id: replayId,
      task_id: task.id,
      uid: 1,
      status: 'running',
      created_at: now,
      task_version: 1,
      config_fingerprint: fingerprint,
      request: { spec: { last: 1 }, now, fingerprint, task_version: 1 },
    });
    const event = sample('sqs/run-replay.json');
    event.Records[0].body = JSON.stringify({ kind: 'replay', replay_id: replayId });
    // Act
    const res = await invoke(handlerOf('run-replay').file, event);
    // Assert
    expect(res).toEqual({ batchItemFailures: [] });
    const done = await api.get('/alarmtask/replay', { query: { uid: 1, replay_id: replayId } });
    expect(done.data).toMatchObject({
      status: 'done',
      alarms: { in_window: 1, replayable: 1 },
      fidelity: { share: 1 },
    });
  });

  it('the notification consumer sends its sample job (an e-mail to user 1)', async () => {
    const task = await ownTask();
    const event = sample('sqs/send-notification.json');
    const message = JSON.parse(event.Records[0].body);
    const marker = randomUUID();
    message.task_id = task.id;
    message.job_id = `${task.id}:${marker}:not_compress:email`;
    message.context.task = { id: task.id, name: task.name };
    Object.assign(message.context.history, { uuid: marker, ctn: { host: 'web-1', error: marker } });
    event.Records[0].body = JSON.stringify(message);
    const res = await invoke(handlerOf('send-notification').file, event);
    expect(res).toEqual({ batchItemFailures: [] });
    const mails = await fakes.mails();
    expect(mails.find((m) => m.text.includes(marker))?.to).toEqual(['annlee@example.com']);
  });
});

/** A signed call to a child stack's API as an app. */
async function childCall(url: string, app: App, method: string, path: string, json: unknown) {
  const ts = Math.floor(Date.now() / 1000);
  const res = await fetch(`${url}${path}`, {
    method,
    headers: {
      'content-type': 'application/json',
      'x-app-id': String(app.id),
      'x-app-timestamp': String(ts),
      'x-app-sign': hmacSign(app.token, app.id, ts),
    },
    body: JSON.stringify(json),
  });
  // biome-ignore lint/suspicious/noExplicitAny: the envelope under test
  return (await res.json()) as { code: number; msg: string; data: any };
}

describe('npm start -- --bundles', () => {
  it('serves the API, the consumers, the schedule and npm run invoke from the bundles', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tocsin-bundles-'));
    const stateFile = join(dir, 'state.json');
    // Only the flag: nothing of this worker's bundle mode is inherited.
    const env = { TOCSIN_BUNDLES: '1', TOCSIN_STATS: '1', [BUNDLE_DIR_VARIABLE]: '' };
    const stack = await startChildStack({ dataDir: ':memory:', stateFile, env });
    try {
      expect(stack.output()).toContain(`functions       bundles ${bundles.dir} (reused)`);
      const imported = await admin(stateFile, 'import', 'test/fixtures/directory.json');
      expect(imported.code, imported.stderr).toBe(0);
      const app = await createApp(stateFile);
      const task = await createWebhookTask(stack.url, app, receiver.url);
      const report = await reportAlarm(stack.url, task, { host: 'bundled' });
      expect(report.code).toBe(0);
      await receiver.waitFor((all) => all.some((r) => r.json?.data?.history?.uuid === report.uuid));

      // The schedule, through the test clock: a pause of a minute ends when it runs.
      const created = await childCall(stack.url, app, 'POST', '/alarmtask/store', {
        name: `bundled-${randomUUID().slice(0, 8)}`,
        created_by: 1,
        department_id: 1,
        flag_save_db: 1,
        receiver: { channels: { webhook: receiver.url } },
      });
      const { id, secret } = created.data.task as { id: number; secret: string };
      const ts = Math.floor(Date.now() / 1000);
      const paused = await childCall(stack.url, app, 'PUT', '/alarmtask/pause', {
        id,
        timestamp: String(ts),
        sign: hmacSign(secret, id, ts),
        time: 1,
      });
      expect(paused.code).toBe(0);
      const clock = await fetch(`${stack.url}/_local/clock`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ advance_seconds: 120 }),
      });
      const due = ((await clock.json()) as { data: { due: { ran: number; failed: number } } }).data.due;
      expect(due.ran).toBeGreaterThanOrEqual(1);
      expect(due.failed).toBe(0);

      // The schedule's sample event, by hand, from its bundle.
      const invoked = await execFileP(
        process.execPath,
        [
          '--import',
          'tsx',
          'shared/local/invoke.ts',
          'run-due-work',
          'events/schedule/run-due-work.json',
          '--bundles',
        ],
        { cwd: projectRoot, env: { ...process.env, ...env, TOCSIN_STATE_FILE: stateFile } },
      );
      expect(JSON.parse(invoked.stdout)).toEqual({ ran: 0, failed: 0 });

      // Every call to the table came from a bundle's own client, readied by the platform adapter the
      // stack installed (shared/platform.ts finds it on the global object): the stack counted them.
      const stats = (await (await fetch(`${stack.url}/_local/stats`)).json()) as {
        dynamodb: Record<string, { calls: number }>;
        invocations: Record<string, { count: number }>;
      };
      expect(stats.invocations['POST /alarm/report']?.count).toBeGreaterThanOrEqual(1);
      expect(stats.dynamodb['BatchExecuteStatement ALARM']?.calls).toBeGreaterThanOrEqual(1);
    } finally {
      stack.child.kill('SIGTERM');
      await stack.exited;
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
