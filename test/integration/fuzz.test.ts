import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { routes } from '../../infra/definitions.ts';
import { build, caseArb, routeNames, send } from './fuzz/requests.ts';
import { hook, prepareTargets, snapshot } from './fuzz/targets.ts';
import { serialize } from './fuzz/values.ts';

/**
 * Hostile-but-fair clients against every endpoint (issue: "a fuzz test of at least 10,000 malformed
 * or hostile requests over every endpoint gets no 5xx and changes no state").
 *
 * Every generated request is a valid request to a real task, workflow or user with at least one
 * poison that the contract says must be refused (a bad signature, an id beyond a safe integer, a
 * field of the wrong type, a value out of range, a too-deep or too-large body, ...), plus hostile
 * noise that must not matter (unknown fields named `__proto__` or `constructor`, U+FFFF, emoji,
 * absurd nesting). So every answer must be a 4xx-class refusal: code != 0, HTTP < 500, an envelope
 * with a message that leaks no stack trace, and afterwards the targets must be exactly as before.
 * fast-check runs with a fixed seed, so a failure reproduces.
 */

const RUNS = Number(process.env.FUZZ_RUNS ?? 10_500);
const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
const PARALLEL = 8;

describe('fuzz: hostile requests over every endpoint', () => {
  beforeAll(prepareTargets);
  afterAll(() => hook.stop());

  it('covers every deployed route', () => {
    // Routes without auth that take no input (health, the API documents, the console) answer 200 to anything.
    const deployed = routes
      .filter((r) => !r.localOnly && r.auth !== 'none')
      .map((r) => `${r.method} ${r.path}`);
    expect(routeNames.sort()).toEqual(deployed.sort());
  });

  it(`answers ${RUNS} hostile requests with refusals, never a 5xx, and changes nothing`, async () => {
    // Arrange
    const before = await snapshot();
    const eventsBefore = hook.received.length;
    const cases = fc.sample(caseArb, { numRuns: RUNS, seed: SEED });
    const failures: string[] = [];
    const perRoute = new Map<string, number>();
    // Act
    let next = 0;
    await Promise.all(
      Array.from({ length: PARALLEL }, async () => {
        for (let i = next++; i < cases.length; i = next++) {
          const c = cases[i];
          perRoute.set(c.route, (perRoute.get(c.route) ?? 0) + 1);
          const req = await build(c);
          const res = await send(req);
          let env: { code?: unknown; msg?: unknown; data?: unknown } = {};
          try {
            env = JSON.parse(res.text);
          } catch {
            env = {};
          }
          const problem =
            res.status >= 500
              ? `HTTP ${res.status}`
              : typeof env.code !== 'number' || typeof env.msg !== 'string' || typeof env.data !== 'object'
                ? 'not an envelope'
                : env.code === 0
                  ? 'accepted'
                  : /\bat .+\.(ts|js):\d+|stack|Dynamo|SQS|\bAWS\b|Exception/.test(String(env.msg))
                    ? `leaky message: ${env.msg}`
                    : undefined;
          if (problem && failures.length < 20)
            failures.push(
              `${problem}: ${c.route} auth=${c.authPoison} wire=${c.wire} poisons=${serialize(c.fieldPoisons).slice(0, 300)} -> ${res.status} ${res.text.slice(0, 200)}`,
            );
        }
      }),
    );
    // Assert
    expect(failures).toEqual([]);
    expect([...perRoute.keys()].sort()).toEqual(routeNames.sort());
    await new Promise((r) => setTimeout(r, 1500));
    expect(await snapshot()).toEqual(before);
    expect(hook.received.slice(eventsBefore).map((r) => r.json?.event)).toEqual([]);
  }, 600_000);
});
