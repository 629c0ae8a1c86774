import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hmacSign, md5Sign } from '../../shared/domain/auth/signature.ts';
import { api, baseUrl, serviceNow, taskAuth, FIXED_SIGN_TIMESTAMP } from '../support/client.ts';
import { TestReceiver } from '../support/receiver.ts';
import { type CreatedTask, createTask } from '../support/tasks.ts';

/**
 * Hostile numbers in every field of every alarm door: `/alarm/report` and each monitor adapter
 * (Alertmanager, Grafana in both body forms, jsonbody, rawbody/arms, Open-Falcon by GET and POST,
 * CloudMonitor, the heartbeat), written as JSON numbers, JSON strings, form fields and query
 * parameters: huge, negative, fractional, exponent forms beyond a double (1e309, 1e-400), -0,
 * NaN/Infinity text, 2^53+1, 30 digits, hex, a sign, a blank.
 *
 * Every field has an expectation. A field that means a number to the service (a task id, a
 * signature time, a level, a notice time, CloudMonitor's alarm time) or a shape (alerts, version,
 * msgtype) refuses what it cannot take with a 4xx envelope naming it, and nothing is stored or
 * sent. A field that is alarm content takes anything, and what it took travels through the queue,
 * the pipeline, the table and the webhook with the digits as written. Never a 5xx, never a stack.
 */

const PARALLEL = 6;

/** The hostile values, as text. */
const HOSTILE = [
  '1e309',
  '-1e309',
  '1e-400',
  '-0',
  '0.0',
  '1.5',
  '-1',
  '9007199254740993',
  '123456789012345678901234567890',
  '99999999999999999999999',
  '1E2',
  'NaN',
  'Infinity',
  '-Infinity',
  '0x1F',
  '+1',
  ' 1',
  '',
  '1_000',
  '٣',
];
const isJsonNumber = (t: string) => /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/.test(t);
/** The JSON forms: each JSON-valid number as a number token, and every value as a JSON string. */
const JSON_VALUES: string[] = [...HOSTILE.filter(isJsonNumber), ...HOSTILE.map((t) => JSON.stringify(t))];
/** Number tokens JSON does not allow: the whole body is no JSON. */
const NOT_JSON_NUMBERS = ['NaN', 'Infinity', '-Infinity', '0x1F', '+1', '.5', '1.', '01', '-'];

// ---- requests and expectations -----------------------------------------------------------------------

/** What must come of a request: taken (and what of it reaches the alarm content), or refused. */
type Expect = { take: true; lands?: string } | { take: false; status: number; code: number; names: RegExp };

interface Case {
  label: string;
  method: 'GET' | 'POST';
  path: string;
  query?: Record<string, string>;
  body?: string;
  contentType?: string;
  headers?: Record<string, string>;
  expect: Expect;
}

const take = (lands?: string): Expect => ({ take: true, ...(lands !== undefined ? { lands } : {}) });
/** An adapter's refusal keeps its HTTP status; /alarm/report answers HTTP 200 (API guide §2.2). */
const refuse = (code: number, names: RegExp, status = code >= 4000 ? 400 : code): Expect => ({
  take: false,
  status,
  code,
  names,
});
/** The JSON value of a JSON form (a number token is read as JavaScript would). */
const jsonValue = (json: string): unknown => JSON.parse(json);
/** How a form or query value lands in the content. */
const landsText = (key: string, text: string) => `${JSON.stringify(key)}:${JSON.stringify(text)}`;
const landsJson = (key: string, json: string) => `${JSON.stringify(key)}:${json}`;

const hook = new TestReceiver();
let task: CreatedTask;
let beat: CreatedTask;
let intakeToken = '';
let serial = 0;

/** A unique marker per case, carried in the content so an alarm is told from any other. */
const marker = () => `n${++serial}`;

/** The original's fixed signature in the query (signed over the timestamp exactly as sent). */
function fixedSign(t: CreatedTask, over: Partial<Record<'taskid' | 'timestamp', string>> = {}) {
  const taskid = over.taskid ?? String(t.id);
  const timestamp = over.timestamp ?? String(FIXED_SIGN_TIMESTAMP);
  return { taskid, timestamp, sign: md5Sign(t.token, taskid, timestamp) };
}

const ADAPTERS: { path: string; method: 'GET' | 'POST'; body: () => { text: string; type: string } }[] = [
  {
    path: '/alarm/alertmanager',
    method: 'POST',
    body: () => ({
      text: JSON.stringify({ version: '4', alerts: [{ labels: { alertname: marker() }, status: 'firing' }] }),
      type: 'application/json',
    }),
  },
  {
    path: '/alarm/grafana',
    method: 'POST',
    body: () => ({
      text: JSON.stringify({ alerts: [{ labels: { alertname: marker() }, status: 'firing' }] }),
      type: 'application/json',
    }),
  },
  {
    path: '/alarm/jsonbody',
    method: 'POST',
    body: () => ({ text: JSON.stringify({ host: marker() }), type: 'application/json' }),
  },
  { path: '/alarm/rawbody', method: 'POST', body: () => ({ text: marker(), type: 'text/plain' }) },
  { path: '/alarm/arms', method: 'POST', body: () => ({ text: marker(), type: 'text/plain' }) },
  { path: '/alarm/falcon', method: 'GET', body: () => ({ text: '', type: '' }) },
  {
    path: '/alarm/falcon',
    method: 'POST',
    body: () => ({ text: `endpoint=${marker()}`, type: 'application/x-www-form-urlencoded' }),
  },
  {
    path: '/alarm/aliyun',
    method: 'POST',
    body: () => ({ text: `alertName=${marker()}`, type: 'application/x-www-form-urlencoded' }),
  },
];

/** The credentials and `level` of every adapter, in the query (and the intake token as a bearer). */
function credentialCases(): Case[] {
  const out: Case[] = [];
  for (const a of ADAPTERS) {
    for (const text of HOSTILE) {
      const base = () => {
        const b = a.body();
        const falcon: Record<string, string> = a.method === 'GET' ? { endpoint: marker() } : {};
        return {
          method: a.method,
          path: a.path,
          ...(b.text ? { body: b.text, contentType: b.type } : {}),
          extra: falcon,
        };
      };
      const label = (field: string) => `${a.method} ${a.path} ${field}=${JSON.stringify(text)}`;
      const denied = refuse(401, /^signature invalid$/);
      let b = base();
      out.push({
        ...b,
        label: label('taskid'),
        query: { ...b.extra, ...fixedSign(task, { taskid: text }) },
        expect: denied,
      });
      b = base();
      out.push({
        ...b,
        label: label('timestamp'),
        query: { ...b.extra, ...fixedSign(task, { timestamp: text }) },
        expect: denied,
      });
      b = base();
      out.push({
        ...b,
        label: label('token'),
        query: { ...b.extra, taskid: String(task.id), token: text },
        expect: denied,
      });
      b = base();
      // (a header holds Latin-1 only)
      if (/^[\x20-\xff]*$/.test(text))
        out.push({
          ...b,
          label: label('bearer'),
          query: { ...b.extra, taskid: String(task.id) },
          headers: { authorization: `Bearer ${text}` },
          // A blank bearer is no bearer: the request then carries no credential at all.
          expect: denied,
        });
      b = base();
      out.push({
        ...b,
        label: label('level'),
        query: { ...b.extra, ...fixedSign(task), level: text },
        expect: text === '' ? take() : refuse(4000, /^level /),
      });
    }
  }
  // The heartbeat: its credentials only (the task pings every week at most; a good ping is taken).
  for (const text of HOSTILE) {
    for (const method of ['GET', 'POST'] as const) {
      const label = (field: string) => `${method} /alarm/heartbeat ${field}=${JSON.stringify(text)}`;
      const denied = refuse(401, /^signature invalid$/);
      out.push({
        label: label('taskid'),
        method,
        path: '/alarm/heartbeat',
        query: fixedSign(beat, { taskid: text }),
        expect: denied,
      });
      out.push({
        label: label('timestamp'),
        method,
        path: '/alarm/heartbeat',
        query: fixedSign(beat, { timestamp: text }),
        expect: denied,
      });
      out.push({
        label: label('token'),
        method,
        path: '/alarm/heartbeat',
        query: { taskid: String(beat.id), token: text },
        expect: denied,
      });
    }
  }
  return out;
}

/** `POST /alarm/report`: the authentication fields, level, notice_time, uuid and the content. */
async function reportCases(): Promise<Case[]> {
  const out: Case[] = [];
  const now = await serviceNow();
  for (const json of JSON_VALUES) {
    const body = (fields: Record<string, string>) => {
      const all: Record<string, string> = {
        taskid: String(task.id),
        timestamp: String(now),
        sign: JSON.stringify(hmacSign(task.token, task.id, now)),
        ctn: `{"m":"${marker()}"}`,
        ...fields,
      };
      return `{${Object.entries(all)
        .map(([k, v]) => `${JSON.stringify(k)}:${v}`)
        .join(',')}}`;
    };
    const v = jsonValue(json);
    const number = typeof v === 'number' && isJsonNumber(json) ? Number(json) : undefined;
    const label = (field: string) => `POST /alarm/report ${field}=${json}`;
    const report = (
      field: string,
      expect: Expect,
      fields: Record<string, string> = { [field]: json },
    ): Case => ({
      label: label(field),
      method: 'POST',
      path: '/alarm/report',
      body: body(fields),
      contentType: 'application/json',
      expect,
    });
    out.push(report('taskid', refuse(401, /^signature invalid$/, 200)));
    out.push(report('timestamp', refuse(401, /^signature was expired$/, 200)));
    out.push(
      report(
        'level',
        number !== undefined && [0, 1, 2, 3].includes(number) ? take() : refuse(4000, /^level /, 200),
      ),
    );
    out.push(
      report(
        'notice_time',
        number !== undefined && Number.isInteger(number) && number >= 0 && number <= 99_999_999_999
          ? take()
          : refuse(4000, /^notice_time /, 200),
      ),
    );
    out.push(report('uuid', refuse(4000, /^uuid /, 200)));
    out.push({
      label: `POST /alarm/report body=${json}`,
      method: 'POST',
      path: '/alarm/report',
      body: json,
      contentType: 'application/json',
      expect: refuse(400, /^request body /, 200),
    });
    const m = marker();
    out.push(report('ctn', take(landsJson('x', json)), { ctn: `{"m":"${m}","x":${json}}` }));
  }
  return out;
}

/** A JSON adapter body with one field set to a JSON text (`path` into the body, created as needed). */
function jsonWith(base: Record<string, unknown>, path: (string | number)[], json: string): string {
  const copy = structuredClone(base) as Record<string | number, unknown>;
  let cur = copy;
  for (const seg of path.slice(0, -1)) cur = cur[seg] as Record<string | number, unknown>;
  cur[path[path.length - 1]] = '__HOSTILE__';
  return JSON.stringify(copy).replace('"__HOSTILE__"', () => json);
}

/** The monitors' content fields, in their own encodings. */
function contentCases(): Case[] {
  const out: Case[] = [];
  const query = () => fixedSign(task);
  const json = (label: string, path: string, body: string, expect: Expect): Case => ({
    label,
    method: 'POST',
    path,
    query: query(),
    body,
    contentType: 'application/json',
    expect,
  });
  for (const v of JSON_VALUES) {
    const value = jsonValue(v);
    const nonEmptyString = typeof value === 'string' && value !== '';
    for (const [path, extra] of [
      ['/alarm/alertmanager', { version: '4' }],
      ['/alarm/grafana', {}],
    ] as const) {
      const alerts = () => ({
        ...extra,
        alerts: [{ labels: { alertname: marker() }, status: 'firing', annotations: {} }],
      });
      const at = (field: string) => `POST ${path} ${field}=${v}`;
      if (path === '/alarm/alertmanager')
        out.push(json(at('version'), path, jsonWith(alerts(), ['version'], v), refuse(4000, /^version /)));
      out.push(json(at('alerts'), path, jsonWith(alerts(), ['alerts'], v), refuse(4000, /^alerts /)));
      out.push(
        json(at('alerts[0]'), path, jsonWith(alerts(), ['alerts', 0], v), refuse(4000, /^alerts\[0\] /)),
      );
      out.push(
        json(
          at('alerts[0].labels'),
          path,
          jsonWith(alerts(), ['alerts', 0, 'labels'], v),
          refuse(4000, /^alerts\[0\]\.labels /),
        ),
      );
      for (const [field, lands] of [
        [['labels', 'x'], landsJson('x', v)],
        [['labels', 'severity'], landsJson('severity', v)],
        [['annotations', 'x'], landsJson('x', v)],
        [['startsAt'], landsJson('startsAt', v)],
        [['generatorURL'], landsJson('generatorURL', v)],
        // A fingerprint is kept when it is a non-empty string (else the labels make one).
        [['fingerprint'], nonEmptyString ? landsJson('fingerprint', v) : undefined],
        [['status'], undefined],
        // Grafana's links are kept when they are non-empty strings.
        ...(path === '/alarm/grafana'
          ? ([[['dashboardURL'], nonEmptyString ? landsJson('dashboardURL', v) : undefined]] as const)
          : []),
      ] as const) {
        out.push(
          json(
            at(`alerts[0].${field.join('.')}`),
            path,
            jsonWith(alerts(), ['alerts', 0, ...field], v),
            take(lands),
          ),
        );
      }
      out.push(json(at('truncatedAlerts'), path, jsonWith(alerts(), ['truncatedAlerts'], v), take()));
    }
    // Grafana's DingDing-notifier body.
    const link = () => ({
      msgtype: 'link',
      link: { title: marker(), text: 't', messageUrl: 'dingtalk://x' },
    });
    const g = (field: string) => `POST /alarm/grafana (DingDing) ${field}=${v}`;
    out.push(json(g('msgtype'), '/alarm/grafana', jsonWith(link(), ['msgtype'], v), refuse(4000, /msgtype/)));
    out.push(json(g('link'), '/alarm/grafana', jsonWith(link(), ['link'], v), refuse(4000, /^link /)));
    for (const field of ['text', 'messageUrl', 'picUrl']) {
      out.push(
        json(
          g(`link.${field}`),
          '/alarm/grafana',
          jsonWith(link(), ['link', field], v),
          take(landsJson(field, v)),
        ),
      );
    }
    // jsonbody: any field is content; the body itself must be an object.
    out.push(
      json(
        `POST /alarm/jsonbody x=${v}`,
        '/alarm/jsonbody',
        `{"m":"${marker()}","x":${v}}`,
        take(landsJson('x', v)),
      ),
    );
    out.push(json(`POST /alarm/jsonbody body=${v}`, '/alarm/jsonbody', v, refuse(400, /^request body /)));
  }
  for (const text of HOSTILE) {
    const t = JSON.stringify(text);
    const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
    for (const path of ['/alarm/rawbody', '/alarm/arms']) {
      out.push({
        label: `POST ${path} body=${t}`,
        method: 'POST',
        path,
        query: query(),
        body: text,
        contentType: 'text/plain',
        expect: text === '' ? refuse(4000, /^request body /) : take(landsText('body', text)),
      });
    }
    out.push({
      label: `GET /alarm/falcon x=${t}`,
      method: 'GET',
      path: '/alarm/falcon',
      query: { ...query(), endpoint: marker(), x: text },
      expect: take(landsText('x', text)),
    });
    out.push({
      label: `POST /alarm/falcon x=${t}`,
      method: 'POST',
      path: '/alarm/falcon',
      query: query(),
      body: form({ endpoint: marker(), x: text }),
      contentType: 'application/x-www-form-urlencoded',
      expect: take(landsText('x', text)),
    });
    const aliyun = (field: string, fields: Record<string, string>, expect: Expect): Case => ({
      label: `POST /alarm/aliyun ${field}=${t}`,
      method: 'POST',
      path: '/alarm/aliyun',
      query: query(),
      body: form({ alertName: marker(), ...fields }),
      contentType: 'application/x-www-form-urlencoded',
      expect,
    });
    // CloudMonitor's alarm time: milliseconds (a blank one is no time: no date).
    out.push(aliyun('timestamp', { timestamp: text }, text === '' ? take() : refuse(4000, /^timestamp /)));
    out.push(aliyun('curValue', { curValue: text }, take(landsText('curValue', text))));
    out.push(
      aliyun('expression', { expression: `$Average>=${text}` }, take(landsText('threshold', `>=${text}`))),
    );
    out.push(
      aliyun(
        'dimensions',
        { dimensions: `{instanceId=${text}}` },
        take(text.trim() ? landsText('instanceId', text.trim()) : '"instanceId":null'),
      ),
    );
  }
  // Number tokens JSON does not have: the body is no JSON.
  for (const token of NOT_JSON_NUMBERS) {
    for (const path of ['/alarm/alertmanager', '/alarm/grafana', '/alarm/jsonbody']) {
      out.push(
        json(`POST ${path} raw ${token}`, path, `{"m":"${marker()}","x":${token}}`, refuse(400, /JSON/)),
      );
    }
  }
  return out;
}

async function send(c: Case) {
  const url = new URL(c.path, baseUrl());
  for (const [k, v] of Object.entries(c.query ?? {})) url.searchParams.set(k, v);
  const headers: Record<string, string> = { ...(c.headers ?? {}) };
  if (c.contentType) headers['content-type'] = c.contentType;
  const res = await fetch(url, { method: c.method, headers, body: c.body });
  const text = await res.text();
  let env: { code?: unknown; msg?: unknown; data?: Record<string, unknown> } = {};
  try {
    env = JSON.parse(text);
  } catch {
    env = {};
  }
  return { status: res.status, text, env };
}

/** The uuids an accepted answer names (`uuid` of single adapters and reports, `uuids` of the others). */
const uuidsOf = (data: Record<string, unknown> | undefined): string[] =>
  data?.uuids ? (data.uuids as string[]) : data?.uuid ? [data.uuid as string] : [];

/** Every alarm of the task in its history, all pages. */
async function history(t: CreatedTask): Promise<string[]> {
  const out: string[] = [];
  let cursor = '';
  do {
    const res = await api.get<{ alarms: { uuid: string }[]; next_cursor: string }>('/alarmtask/alarms', {
      query: { uid: 1, task_id: t.id, limit: 100, ...(cursor ? { cursor } : {}) },
    });
    if (res.code !== 0) throw new Error(`history: ${res.status} ${res.msg}`);
    out.push(...res.data.alarms.map((a) => a.uuid));
    cursor = res.data.next_cursor;
  } while (cursor);
  return out;
}

beforeAll(async () => {
  await hook.start();
  task = await createTask({ receiver: { channels: { webhook: `${hook.url}/numbers` } } });
  beat = await createTask({ receiver: { channels: { webhook: `${hook.url}/beat` } } });
  // Every alert counts against the task's rate limit: this task takes far more than a fuzz sends.
  for (const t of [task, beat]) {
    const limit = await api.put('/alarmtask/ratelimit', { ...(await taskAuth(t)), rate_limit: 100_000 });
    expect(limit.code).toBe(0);
    expect((await api.put('/alarmtask/intake', { ...(await taskAuth(t)), fixed_sign: 1 })).code).toBe(0);
  }
  const issued = await api.put('/alarmtask/intake', await taskAuth(task));
  intakeToken = issued.data.intake_token as string;
  expect(intakeToken).toMatch(/^tki_/);
  // The heartbeat's task expects a ping every week (no miss can come from another suite's clock).
  expect((await api.put('/alarmtask/heartbeat', { ...(await taskAuth(beat)), interval: 10_080 })).code).toBe(
    0,
  );
  await hook.waitFor((all) => all.filter((r) => r.json?.event === 'PING').length >= 2);
});
afterAll(() => hook.stop());

describe('fuzz: hostile numbers in every field of every alarm door', () => {
  it('refuses what a field cannot take (naming it, storing nothing) and carries what it takes exactly', async () => {
    // Arrange
    const cases = [...credentialCases(), ...(await reportCases()), ...contentCases()];
    // A control: the heartbeat's task takes a well-signed ping.
    const ping = await send({
      label: 'ping',
      method: 'GET',
      path: '/alarm/heartbeat',
      query: fixedSign(beat),
      expect: take(),
    });
    expect([ping.status, ping.env.code]).toEqual([200, 0]);
    const eventsBefore = hook.received.length;
    const failures: string[] = [];
    const accepted = new Map<string, Case>();
    // Act
    let next = 0;
    await Promise.all(
      Array.from({ length: PARALLEL }, async () => {
        for (let i = next++; i < cases.length; i = next++) {
          const c = cases[i];
          const res = await send(c);
          const { env } = res;
          const fail = (why: string) =>
            failures.length < 30 &&
            failures.push(`${c.label}: ${why} -> ${res.status} ${res.text.slice(0, 200)}`);
          if (res.status >= 500) fail('a 5xx');
          else if (
            typeof env.code !== 'number' ||
            typeof env.msg !== 'string' ||
            typeof env.data !== 'object'
          )
            fail('not an envelope');
          else if (/\bat .+\.(ts|js):\d+|stack|Error:|Exception/.test(env.msg)) fail('a leaky message');
          else if (c.expect.take) {
            if (env.code !== 0 || res.status !== 200) fail('refused');
            for (const u of uuidsOf(env.data)) accepted.set(u, c);
          } else if (env.code !== c.expect.code || res.status !== c.expect.status) fail('another answer');
          else if (!c.expect.names.test(env.msg)) fail(`a message not naming the field (${c.expect.names})`);
        }
      }),
    );
    // Assert: the answers.
    expect(failures).toEqual([]);
    expect(cases.length).toBeGreaterThan(1_000);
    // Assert: what was taken was processed, stored and sent with its content as written; nothing else.
    const alarmEvents = () =>
      hook.received
        .slice(eventsBefore)
        .filter((r) => r.path === '/numbers' && (r.json?.event === 'ALARM' || r.json?.event === 'RECOVERY'));
    await hook.waitFor(
      () => new Set(alarmEvents().map((r) => r.json.data.history?.uuid)).size >= accepted.size,
      120_000,
    );
    const events = alarmEvents();
    const byUuid = new Map(events.map((r) => [r.json.data.history.uuid as string, r]));
    expect([...byUuid.keys()].sort()).toEqual([...accepted.keys()].sort());
    const lost: string[] = [];
    for (const [uuid, c] of accepted) {
      const lands = c.expect.take ? c.expect.lands : undefined;
      if (lands && !byUuid.get(uuid)?.body.includes(lands)) lost.push(`${c.label}: no ${lands}`);
    }
    expect(lost).toEqual([]);
    expect([...accepted.values()].filter((c) => c.expect.take && c.expect.lands).length).toBeGreaterThan(300);
    // (A message the queue delivered twice is logged twice; the listing drops repeats within a page.)
    expect([...new Set(await history(task))].sort()).toEqual([...accepted.keys()].sort());
    // The heartbeat's task took no alarm and sent nothing.
    expect(hook.received.slice(eventsBefore).filter((r) => r.path === '/beat')).toEqual([]);
    expect(await history(beat)).toEqual([]);
  }, 600_000);
});
