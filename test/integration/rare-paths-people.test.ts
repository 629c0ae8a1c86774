import { createHash, randomBytes } from 'node:crypto';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { routeEntry, routes } from '../../infra/definitions.ts';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { addPeople, Browser } from '../support/people.ts';

/**
 * What signed-in people do that the sign-in suites leave out: a session last used over a minute ago
 * refreshed by whichever function it comes to (a route of its own on AWS, or the first route of a
 * function group: the function remembers the refresh for the minute), and a password change
 * tried while the account is locked. With the rest of the suite they let the least-privilege check
 * see every grant of the person's path in use (docs/aws-operations.md, "Least privilege").
 */
const run = randomBytes(3).toString('hex');
const OPS = { uid: 8601, user: `ops-${run}`, email: `ops-${run}@example.com`, username: 'Ops Rare', role: 9 };
const LU = { uid: 8602, user: `lu-${run}`, email: `lu-${run}@example.com`, username: 'Lu Rare' };
const PASSWORD = 'a rare password 1';

beforeAll(async () => {
  await addPeople([
    { ...OPS, password: PASSWORD },
    { ...LU, password: PASSWORD },
  ]);
});

const sessionKey = (cookie: string) => keys.session(createHash('sha256').update(cookie).digest('hex'));

const lastSeen = async (cookie: string) =>
  Number(
    (
      await db().send(
        new GetCommand({ TableName: tableName(), Key: sessionKey(cookie), ConsistentRead: true }),
      )
    ).Item?.last_seen,
  );

/** Moves the session's last use two minutes back (as if the person had paused). */
async function pause(cookie: string): Promise<number> {
  const out = await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: sessionKey(cookie),
      UpdateExpression: 'SET last_seen = last_seen - :two',
      ExpressionAttributeValues: { ':two': 120 },
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  return Number(out.Attributes?.last_seen);
}

describe('a signed-in person on every route a person may call', () => {
  it('is served as themselves, and a session unused for a minute is refreshed by each function', async () => {
    // Arrange: a super administrator (every route beyond the interface is theirs); sign-out comes last
    const b = new Browser();
    expect((await b.signIn(OPS.user, PASSWORD)).json.code).toBe(0);
    const personal = routes.filter(
      (r) => !r.localOnly && ['app|person', 'reader', 'admin', 'person'].includes(r.auth),
    );
    const ordered = [
      ...personal.filter((r) => r.path !== '/auth/signout'),
      ...personal.filter((r) => r.path === '/auth/signout'),
    ];
    expect(ordered.length).toBeGreaterThan(20);
    const functions = new Set<string>();
    for (const route of ordered) {
      const first = !functions.has(routeEntry(route));
      functions.add(routeEntry(route));
      const cookie = b.session as string;
      const before = await pause(cookie);
      // Act: what the route makes of an empty request does not matter here (most refuse it as invalid)
      const answer = await b.send(route.path, {
        method: route.method,
        ...(route.method === 'GET' ? {} : { json: {} }),
      });
      // Assert: the person was let in, and the session's last use moved forward
      const label = `${route.method} ${route.path}`;
      expect([401, 403], `${label}: ${answer.text}`).not.toContain(answer.status);
      expect(answer.status, `${label}: ${answer.text}`).toBeLessThan(500);
      if (route.path === '/auth/signout') expect(answer.json.code, label).toBe(0);
      else if (first) expect(await lastSeen(cookie), label).toBeGreaterThan(before);
    }
  }, 120_000);
});

describe('a password change while the account is locked', () => {
  it('is refused without trying the password', async () => {
    // Arrange: five wrong current passwords lock the account (the fifth locks it)
    const b = new Browser();
    expect((await b.signIn(LU.user, PASSWORD)).json.code).toBe(0);
    const change = (current: string) =>
      b.send('/auth/password', { method: 'PUT', json: { current, password: 'a new rare password' } });
    const wrong = [];
    for (let i = 0; i < 5; i++) wrong.push(await change(`not it ${i}`));
    // Act: the right one now
    const locked = await change(PASSWORD);
    // Assert
    expect(wrong.map((a) => a.json.msg)).toEqual(Array(5).fill('current is not your current password'));
    expect([locked.status, locked.json.msg]).toEqual([
      429,
      'too many failed sign-ins for this account: try again in 15 minutes',
    ]);
  });
});
