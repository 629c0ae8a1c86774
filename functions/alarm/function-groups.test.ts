import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { functionGroups, type FunctionGroup, routeEntry, routes } from '../../infra/definitions.ts';
import type { DispatchingHandler } from '#shared/http/dispatch.ts';
import { lambdaContext } from '#shared/local/lambda.ts';
import type { HttpEvent } from '#shared/http/handler.ts';

const root = join(import.meta.dirname, '..', '..');
const load = async <T>(file: string, name = 'handler'): Promise<T> =>
  (await import(pathToFileURL(join(root, file)).href))[name] as T;

describe.each(Object.keys(functionGroups) as FunctionGroup[])('function group %s', (group) => {
  const members = routes.filter((r) => r.fn === group);

  it('dispatches exactly its routes, each to the handler module of the route', async () => {
    // Arrange
    const entry = await load<DispatchingHandler>(functionGroups[group].handler);
    // Act
    const keys = [...entry.routes.keys()];
    // Assert
    expect(members.length).toBeGreaterThan(1);
    expect(keys.sort()).toEqual(members.map((r) => `${r.method} ${r.path}`).sort());
    for (const r of members) {
      expect(entry.routes.get(`${r.method} ${r.path}`), r.path).toBe(await load(r.handler));
      expect(routeEntry(r)).toBe(functionGroups[group].handler);
    }
  });

  it('answers an event of another route with the 404 envelope', async () => {
    // Arrange: a sample event of a route outside the group
    const entry = await load<DispatchingHandler>(functionGroups[group].handler);
    const event = JSON.parse(
      readFileSync(join(root, 'events/http/GetAlarmtaskShow.json'), 'utf8'),
    ) as HttpEvent;
    // Act
    const result = await entry(event, lambdaContext('group-test'));
    // Assert
    expect(result.statusCode).toBe(404);
    expect(JSON.parse(String(result.body))).toMatchObject({ code: 404 });
    expect(String(result.body)).toContain('GET /alarmtask/show');
  });
});

it('keeps every route without a group on its own entry', () => {
  for (const r of routes.filter((x) => !x.fn)) expect(routeEntry(r)).toBe(r.handler);
});
