import { signRequest } from '../domain/auth/request-signature.ts';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { routeEntry, routes } from '../../infra/definitions.ts';
import { allEvents, routeName } from '../../scripts/gen-events.ts';
import { verifySignature } from '../domain/auth/signature.ts';
import { handlerOf, signEvent } from './invoke.ts';
import { projectRoot } from './paths.ts';

const eventsDir = join(projectRoot, 'events');

describe('sample events (events/)', () => {
  it('are what scripts/gen-events.ts writes (run `npm run gen:events` after changing a route)', () => {
    const expected = allEvents();
    const onDisk = ['http', 'sqs', 'schedule'].flatMap((d) =>
      readdirSync(join(eventsDir, d)).map((f) => `${d}/${f}`),
    );
    expect(onDisk.sort()).toEqual(Object.keys(expected).sort());
    for (const [file, event] of Object.entries(expected)) {
      expect(JSON.parse(readFileSync(join(eventsDir, file), 'utf8')), file).toEqual(event);
    }
  });

  it('cover every deployed route with its route key, and name functions as the CDK stack does', () => {
    for (const r of routes.filter((x) => !x.localOnly)) {
      const event = JSON.parse(readFileSync(join(eventsDir, 'http', `${routeName(r)}.json`), 'utf8'));
      expect(event.routeKey).toBe(`${r.method} ${r.path}`);
      expect(handlerOf(routeName(r)).file).toBe(routeEntry(r));
    }
    expect(routeName({ method: 'PUT', path: '/alarmtask/update' })).toBe('PutAlarmtaskUpdate');
    expect(handlerOf('process-alarm').file).toBe('functions/queue/process-alarm.ts');
    expect(handlerOf('run-due-work').file).toBe('functions/schedule/run-due-work.ts');
    expect(() => handlerOf('NoSuchFunction')).toThrow('unknown function NoSuchFunction');
  });
});

describe('npm run invoke signs events afresh', () => {
  const event = (name: string) => JSON.parse(readFileSync(join(eventsDir, 'http', `${name}.json`), 'utf8'));
  const now = 1_800_000_000;

  it('app and task auth of a JSON body, query and form', () => {
    const keys = { app: [7, 'app-token'] as [number, string], task: [12, 'task-secret'] as [number, string] };
    const stop = signEvent(event('PutAlarmtaskStop'), handlerOf('PutAlarmtaskStop').route, keys, now);
    expect(stop.headers['x-app-id']).toBe('7');
    // The request-bound signature, over the body as it was sent (with the task parameters in it).
    const nonce = stop.headers['x-app-nonce'];
    expect(nonce).toMatch(/^[A-Za-z0-9_-]{22}$/);
    const request = { method: 'PUT', path: '/alarmtask/stop', rawQuery: '', body: Buffer.from(stop.body) };
    expect(stop.headers['x-app-sign']).toBe(signRequest('app-token', request, 7, String(now), nonce));
    const body = JSON.parse(stop.body);
    expect([body.id, body.timestamp]).toEqual([12, String(now)]);
    expect(verifySignature('task-secret', '12', String(now), body.sign, false)).toBe(true);
    const show = signEvent(event('GetAlarmtaskShow'), handlerOf('GetAlarmtaskShow').route, keys, now);
    expect(show.queryStringParameters).toMatchObject({ id: 12, timestamp: String(now) });
    expect(show.rawQueryString).toContain('id=12');
    const showRequest = {
      method: 'GET',
      path: '/alarmtask/show',
      rawQuery: show.rawQueryString,
      body: Buffer.alloc(0),
    };
    expect(show.headers['x-app-sign']).toBe(
      signRequest('app-token', showRequest, 7, String(now), show.headers['x-app-nonce']),
    );
    const del = signEvent(event('DeleteAlarmtask'), handlerOf('DeleteAlarmtask').route, keys, now);
    expect(new URLSearchParams(del.body).get('id')).toBe('12');
  });

  it('alarm auth in the body of /alarm/report and in the query of the adapters', () => {
    const keys = { alarm: [5, 'task-token'] as [number, string] };
    const report = JSON.parse(
      signEvent(event('PostAlarmReport'), handlerOf('PostAlarmReport').route, keys, now).body,
    );
    expect([report.taskid, report.timestamp]).toEqual([5, now]);
    expect(verifySignature('task-token', '5', String(now), report.sign, false)).toBe(true);
    const am = signEvent(event('PostAlarmAlertmanager'), handlerOf('PostAlarmAlertmanager').route, keys, now);
    expect(am.queryStringParameters.taskid).toBe('5');
    expect(verifySignature('task-token', '5', String(now), am.queryStringParameters.sign, false)).toBe(true);
  });
});
