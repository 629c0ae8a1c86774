import { randomBytes } from 'node:crypto';
import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { db, tableName } from '../../shared/db/client.ts';
import { keys } from '../../shared/db/keys.ts';
import { type Key, type Limits, lock, takeSlot } from '../../shared/domain/auth/lockout.ts';
import { hashPassword } from '../../shared/domain/auth/passwords.ts';
import { loadSealKey } from '../../shared/domain/auth/seal.ts';
import { importDirectory } from '../../shared/domain/directory/service.ts';
import { failedTry, goodTry, takeTries } from '../../shared/domain/signin/throttle.ts';
import { advanceClock, serviceNow } from '../support/client.ts';
import { addPeople, admin, Browser } from '../support/people.ts';

/**
 * The lockout (docs/security.md, "Sign-in and lockout") against DynamoDB Local: the conditional
 * writes of every counter under a right and a wrong password at the same moment, parallel first
 * tries, strangers guessing an owner's account, the operator's unlock, and a password hash made
 * with older parameters replaced at sign-in. Failed sign-ins come from loopback addresses of their
 * own (127.0.1.x), so the address throttle reaches no other suite.
 */
const run = randomBytes(3).toString('hex');
const HAL = {
  uid: 8111,
  user: `hal-${run}`,
  email: `hal-${run}@example.com`,
  username: 'Hal Lockout',
  role: 9,
};
const IVY = { uid: 8112, user: `ivy-${run}`, email: `ivy-${run}@example.com`, username: 'Ivy Lockout' };
const JO = { uid: 8113, user: `jo-${run}`, email: `jo-${run}@example.com`, username: 'Jo Lockout' };
const PASSWORDS = {
  [HAL.uid]: 'hal password 1111',
  [IVY.uid]: 'ivy password 2222',
  [JO.uid]: 'jo password 33333',
};
const LIMITS: Limits = { max: 5, windowSeconds: 900, lockSeconds: 900, maxLockSeconds: 86_400 };

beforeAll(async () => {
  await loadSealKey();
  await addPeople([
    { ...HAL, password: PASSWORDS[HAL.uid] },
    { ...IVY, password: PASSWORDS[IVY.uid] },
    { ...JO, password: PASSWORDS[JO.uid] },
  ]);
});

const counter = async (key: Key) =>
  (await db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }))).Item;

describe('the counters’ conditional writes', () => {
  it('never leave a lock without a way out when a right and a wrong password land at once', async () => {
    // 30 accounts, each with 3 wrong tries; then a right password takes the 4th slot and a wrong one
    // the 5th (it fills the limit and locks), and their writes (the wrong one's lock, the right
    // one's reset) land at the same moment, in both orders: the review's lock that never ended.
    const now = 1_900_000_000;
    const subjects = Array.from({ length: 30 }, (_, i) => `uid#race-${run}-${i}`);
    await Promise.all(
      subjects.map(async (subject, i) => {
        for (let t = 0; t < 3; t++) {
          const tries = await takeTries(subject, '127.0.1.1', now, false);
          await failedTry(tries, now);
        }
        const right = await takeTries(subject, '127.0.1.1', now, false);
        const wrong = await takeTries(subject, '127.0.1.1', now, false);
        expect(wrong.at.counter.tries).toBe(LIMITS.max);
        const steps = [() => failedTry(wrong, now), () => goodTry(right, now)];
        if (i % 2) steps.reverse();
        await Promise.all(steps.map((step) => step()));
      }),
    );
    for (const subject of subjects) {
      const item = await counter(keys.signInThrottleFrom(subject, '127.0.1.1'));
      // Whatever the order, the item is whole: a window, its tries and a lock time (0: none)...
      expect(item, subject).toMatchObject({
        window_start: expect.any(Number),
        tries: expect.any(Number),
        locked_until: expect.any(Number),
      });
      // ...so a try succeeds once the lock and the window have passed.
      const later = Math.max(Number(item?.locked_until), now + LIMITS.windowSeconds) + 1;
      expect(
        (await takeSlot(keys.signInThrottleFrom(subject, '127.0.1.1'), LIMITS, later)).taken,
        subject,
      ).toBe(true);
    }
  });

  it('lets an item written with a lock and no window (as the old writes could leave it) recover', async () => {
    // Arrange: the stuck state of the review: `locked_until` long past, no `window_start`
    const key = keys.signInThrottle(`uid#stuck-${run}`);
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: key,
        UpdateExpression: 'SET locked_until = :u, #ttl = :t',
        ExpressionAttributeNames: { '#ttl': 'ttl' },
        ExpressionAttributeValues: { ':u': 1_000, ':t': 2_000_000_000 },
      }),
    );
    // Act
    const slot = await takeSlot(key, LIMITS, 1_900_000_000);
    // Assert
    expect(slot).toMatchObject({
      taken: true,
      counter: { tries: 1, window_start: 1_900_000_000, locked_until: 0 },
    });
  });

  it('gives every parallel first try its slot: no 429 while the window has room', async () => {
    const key = keys.signInThrottle(`ip#first-${run}`);
    const slots = await Promise.all(
      Array.from({ length: 20 }, () => takeSlot(key, { ...LIMITS, max: 30 }, 1_900_000_000)),
    );
    expect(slots.filter((s) => !s.taken)).toEqual([]);
    expect(slots.map((s) => (s.taken ? s.counter.tries : 0)).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
    // Past the limit, the refusal says until when the window lasts.
    const more = await Promise.all(
      Array.from({ length: 15 }, () => takeSlot(key, { ...LIMITS, max: 30 }, 1_900_000_000)),
    );
    expect(more.filter((s) => s.taken)).toHaveLength(10);
    expect(more.filter((s) => !s.taken).map((s) => (s.taken ? 0 : s.until))).toEqual(
      Array(5).fill(1_900_000_900),
    );
  });

  it('locks longer each time within a day', async () => {
    const key = keys.signInThrottle(`uid#escalate-${run}`);
    let now = 1_900_000_000;
    const ends: number[] = [];
    for (let round = 0; round < 3; round++) {
      let slot = await takeSlot(key, LIMITS, now);
      for (let t = 1; t < LIMITS.max; t++) slot = await takeSlot(key, LIMITS, now);
      if (!slot.taken) throw new Error('refused');
      const until = await lock(slot, LIMITS, now);
      ends.push(until - now);
      now = until + 1;
    }
    expect(ends).toEqual([900, 1800, 3600]);
  });
});

describe('over HTTP', () => {
  it('signs the owner in once the lock of a simultaneous right and wrong password passes', async () => {
    // Arrange: 4 wrong passwords
    const b = new Browser('127.0.1.2');
    for (let i = 0; i < 4; i++) expect((await b.signIn(HAL.user, `guess ${i}`)).status).toBe(401);
    // Act: the right and a wrong password at the same moment
    const [right, wrong] = await Promise.all([
      new Browser('127.0.1.2').signIn(HAL.user, PASSWORDS[HAL.uid]),
      new Browser('127.0.1.2').signIn(HAL.user, 'guess 5'),
    ]);
    // Assert: each is answered; afterwards the account is either free or locked for a stated time
    expect([200, 429]).toContain(right.status);
    expect([401, 429]).toContain(wrong.status);
    const now = await serviceNow();
    const item = await counter(keys.signInThrottleFrom(`uid#${HAL.uid}`, '127.0.1.2'));
    expect(Number(item?.window_start)).toBeGreaterThan(0);
    expect(Number(item?.locked_until)).toBeLessThanOrEqual(now + 900);
    await advanceClock(15 * 60 + 5);
    expect((await new Browser('127.0.1.2').signIn(HAL.user, PASSWORDS[HAL.uid])).json.code).toBe(0);
  });

  it('answers parallel first tries from one address with 401, not a false 429', async () => {
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => new Browser('127.0.1.3').signIn(`first-${run}-${i}`, 'a guess')),
    );
    expect(answers.map((a) => a.status)).toEqual(Array(12).fill(401));
  });

  it('keeps the owner signing in from a known address while strangers lock the account elsewhere', async () => {
    // Arrange: Ivy signs in from her office (the address becomes known to her account)
    expect((await new Browser('127.0.1.4').signIn(IVY.user, PASSWORDS[IVY.uid])).json.code).toBe(0);
    // Act: 20 wrong passwords (SIGNIN_ACCOUNT_MAX_FAILURES) from 20 addresses, one each
    const sprayed = await Promise.all(
      Array.from({ length: 20 }, (_, i) => new Browser(`127.0.2.${i + 1}`).signIn(IVY.user, `spray ${i}`)),
    );
    expect(sprayed.map((a) => a.status)).toEqual(Array(20).fill(401));
    const office = await new Browser('127.0.1.4').signIn(IVY.user, PASSWORDS[IVY.uid]);
    const travelling = await new Browser('127.0.1.5').signIn(IVY.user, PASSWORDS[IVY.uid]);
    // Assert
    expect(office.json.code).toBe(0);
    expect([travelling.status, travelling.json.msg]).toEqual([
      429,
      'too many failed sign-ins for this account: try again in 15 minutes',
    ]);
    // Act: the operator lifts the lock
    const unlocked = await admin(['user', 'unlock', String(IVY.uid)]);
    // Assert
    expect(unlocked.stdout).toContain(`user ${IVY.uid} (Ivy Lockout) may sign in again`);
    expect((await new Browser('127.0.1.5').signIn(IVY.user, PASSWORDS[IVY.uid])).json.code).toBe(0);
  }, 180_000); // 24 sign-ins, each a scrypt of 128 MiB

  it('lifts a lock when the operator sets a new password', async () => {
    // Arrange: Jo locked at an address
    const b = new Browser('127.0.1.6');
    for (let i = 0; i < 5; i++) await b.signIn(JO.user, `guess ${i}`);
    expect((await b.signIn(JO.user, PASSWORDS[JO.uid])).status).toBe(429);
    // Act
    const set = await admin(['user', 'password', String(JO.uid)], 'a brand new jo password\n');
    // Assert
    expect(set.code, set.stderr).toBe(0);
    expect((await b.signIn(JO.user, 'a brand new jo password')).json.code).toBe(0);
  });

  it('replaces a password hash made with older parameters at the next sign-in', async () => {
    // Arrange: Hal's hash as an older release made it (N = 2^15)
    const old = await hashPassword(PASSWORDS[HAL.uid], { logN: 15, r: 8, p: 1 });
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.userCredential(HAL.uid),
        UpdateExpression: 'SET password = :p',
        ExpressionAttributeValues: { ':p': old },
      }),
    );
    // Act
    const signedIn = await new Browser('127.0.1.7').signIn(HAL.user, PASSWORDS[HAL.uid]);
    // Assert
    expect(signedIn.json.code).toBe(0);
    const stored = (await counter(keys.userCredential(HAL.uid)))?.password as string;
    expect(stored).toMatch(/^scrypt\$17\$8\$1\$/);
    expect((await new Browser('127.0.1.7').signIn(HAL.user, PASSWORDS[HAL.uid])).json.code).toBe(0);
  });

  it('refuses a deactivated person’s password and ends their sessions', async () => {
    // Arrange
    const b = new Browser('127.0.1.8');
    expect((await b.signIn(IVY.user, PASSWORDS[IVY.uid])).json.code).toBe(0);
    // Act
    await admin(['user', 'deactivate', String(IVY.uid)]);
    const session = await b.send('/auth/session');
    const again = await new Browser('127.0.1.8').signIn(IVY.user, PASSWORDS[IVY.uid]);
    await admin(['user', 'activate', String(IVY.uid)]);
    const back = await new Browser('127.0.1.8').signIn(IVY.user, PASSWORDS[IVY.uid]);
    // Assert
    expect(session.status).toBe(401);
    expect([again.status, again.json.msg]).toEqual([401, 'account or password is wrong']);
    expect(back.json.code).toBe(0);
    // The same through the directory import: `active: false`, then an import without it keeps it
    await importDirectory({ users: [{ ...IVY, active: false }] });
    await importDirectory({ users: [IVY] });
    expect((await new Browser('127.0.1.8').signIn(IVY.user, PASSWORDS[IVY.uid])).status).toBe(401);
    await importDirectory({ users: [{ ...IVY, active: true }] });
    expect((await new Browser('127.0.1.8').signIn(IVY.user, PASSWORDS[IVY.uid])).json.code).toBe(0);
  }, 120_000);
});
