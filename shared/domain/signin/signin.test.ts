import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { User } from '../directory/model.ts';
import { AppError } from '../errors.ts';
import { type Counter, type Key, type Limits, lockSecondsOf, type Slot } from '../auth/lockout.ts';
import { hashPassword } from '../auth/passwords.ts';
import { loadSealKey } from '../auth/seal.ts';
import { resetSignInSettings } from '../auth/settings.ts';
import { resetConfig } from '../../config/env.ts';
import { type SignInDeps, signInWithPassword, WRONG } from './signin.ts';

/**
 * The sign-in use case with its table calls replaced by an in-memory store that keeps the throttle
 * items as the conditional writes of lockout.ts do (the real ones run in
 * test/integration/sign-in.test.ts).
 */
const ANN: User = {
  uid: 1,
  username: 'Ann Lee',
  pinyin: 'annlee',
  user: 'annlee',
  email: 'annlee@example.com',
  department: '',
  phone: '',
  wechatid: '',
  role: 9,
  created_at: 0,
  updated_at: 0,
};
const BO: User = { ...ANN, uid: 2, username: 'Bo', user: 'bo', email: 'bo@example.com', role: 0 };
const CY: User = { ...ANN, uid: 3, username: 'Cy', user: 'cy', email: 'cy@example.com', role: 0 };

function fakes(passwords: Map<number, string>) {
  let now = 1_800_000_000;
  // The counters as lockout.ts keeps them (its conditional writes run against DynamoDB Local in
  // test/integration/sign-in.test.ts).
  const items = new Map<string, Counter>();
  const id = (k: Key) => `${k.pk}|${k.sk}`;
  const fresh = (): Counter => ({
    tries: 0,
    window_start: 0,
    locked_until: 0,
    locks: 0,
    locked_at: 0,
    known_until: 0,
  });
  const sessions: number[] = [];
  const rehashed: number[] = [];
  const deps: SignInDeps = {
    findUsers: async (name) =>
      [ANN, BO, CY].filter((u) => u.user === name.toLowerCase() || u.email === name.toLowerCase()),
    getCredential: async (uid) => (passwords.has(uid) ? { password: passwords.get(uid) } : undefined),
    hashPassword: async () => 'scrypt$17$...',
    rehashPassword: async (uid) => {
      rehashed.push(uid);
      return true;
    },
    takeSlot: async (key: Key, limits: Limits, at: number): Promise<Slot> => {
      const c = items.get(id(key)) ?? fresh();
      items.set(id(key), c);
      const cut = at - limits.windowSeconds;
      if (c.window_start > cut && c.tries < limits.max && c.locked_until <= at) {
        c.tries++;
        return { taken: true, key, counter: { ...c } };
      }
      if ((c.window_start <= cut || c.locked_until > 0) && c.locked_until <= at) {
        Object.assign(c, { tries: 1, window_start: at, locked_until: 0 });
        return { taken: true, key, counter: { ...c } };
      }
      return {
        taken: false,
        key,
        until: c.locked_until > at ? c.locked_until : c.window_start + limits.windowSeconds,
      };
    },
    lock: async (slot, limits, at) => {
      const c = items.get(id(slot.key)) as Counter;
      const seconds = lockSecondsOf(c, limits, at);
      Object.assign(c, { locked_until: at + seconds, locks: c.locks + 1, locked_at: at });
      return c.locked_until;
    },
    clearSlot: async (key, at, known) => {
      const c = items.get(id(key)) ?? fresh();
      if (c.locked_until > at) return;
      items.set(id(key), {
        ...fresh(),
        window_start: at,
        known_until: known ? at + 30 * 86_400 : c.known_until,
      });
    },
    returnSlot: async (key) => {
      const c = items.get(id(key));
      if (c && c.tries > 0) c.tries--;
    },
    createSession: async (uid) => {
      sessions.push(uid);
      return {
        id: `session-${sessions.length}`,
        session: {
          hash: 'h',
          uid,
          method: 'password',
          created_ms: now * 1000,
          last_seen: now,
          expires_at: now + 3600,
        },
      };
    },
    now: () => now,
  };
  return { deps, sessions, rehashed, items, advance: (s: number) => (now += s) };
}

/** The refusal of a sign-in: [HTTP status, message, Retry-After]. */
async function refusal(p: Promise<unknown>): Promise<[number, string, string | undefined]> {
  try {
    await p;
  } catch (err) {
    if (err instanceof AppError) return [err.status, err.message, err.headers['retry-after']];
    throw err;
  }
  throw new Error('signed in');
}

let passwords: Map<number, string>;

beforeAll(async () => {
  process.env.TABLE_NAME = 'unit';
  process.env.SEAL_KEY = Buffer.alloc(32, 9).toString('base64');
  resetConfig();
  process.env.SIGNIN_ADDRESS_MAX_FAILURES = '8';
  process.env.SIGNIN_ACCOUNT_MAX_FAILURES = '12';
  resetSignInSettings();
  await loadSealKey();
  passwords = new Map([
    // Made with cheap parameters, so that the many checks below are fast.
    [1, await hashPassword('ann-s password', { logN: 12, r: 8, p: 1 })],
    [3, await hashPassword('old hash password', { logN: 12, r: 8, p: 1 })],
  ]);
});

afterAll(() => {
  delete process.env.SIGNIN_ADDRESS_MAX_FAILURES;
  delete process.env.SIGNIN_ACCOUNT_MAX_FAILURES;
  resetSignInSettings();
});

describe('signing in with a password', () => {
  let f: ReturnType<typeof fakes>;
  beforeEach(() => {
    f = fakes(passwords);
  });
  const tryAs = (account: string, password: string, address = '192.0.2.1') =>
    signInWithPassword({ account, password, address }, f.deps);

  it('signs in by account name or e-mail, whatever the case', async () => {
    // Act
    const byName = await tryAs(' AnnLee ', 'ann-s password');
    const byEmail = await tryAs('annlee@example.com', 'ann-s password');
    // Assert
    expect(byName.person).toEqual({
      uid: 1,
      username: 'Ann Lee',
      user: 'annlee',
      email: 'annlee@example.com',
      role: 9,
    });
    expect(byEmail.person.uid).toBe(1);
    expect(f.sessions).toEqual([1, 1]);
  });

  it('answers a wrong password, an unknown account and a person without a password alike', async () => {
    // Act
    const answers = await Promise.all([
      refusal(tryAs('annlee', 'not the password')),
      refusal(tryAs('nobody', 'ann-s password')),
      refusal(tryAs('bo', 'anything at all')),
    ]);
    // Assert
    expect(answers).toEqual([
      [401, WRONG, undefined],
      [401, WRONG, undefined],
      [401, WRONG, undefined],
    ]);
    expect(f.sessions).toEqual([]);
  });

  it('locks an account after 5 wrong passwords within 15 minutes: the right one is refused too', async () => {
    // Arrange
    for (let i = 0; i < 5; i++) expect((await refusal(tryAs('annlee', `guess ${i}`)))[0]).toBe(401);
    // Act
    const [status, msg, retryAfter] = await refusal(tryAs('annlee@example.com', 'ann-s password'));
    // Assert: refused, by either name of the account
    expect([status, msg]).toEqual([
      429,
      'too many failed sign-ins for this account: try again in 15 minutes',
    ]);
    expect(Number(retryAfter)).toBe(900);
    expect(f.sessions).toEqual([]);
    // Act: the lock has passed
    f.advance(901);
    const signedIn = await tryAs('annlee', 'ann-s password');
    // Assert
    expect(signedIn.person.uid).toBe(1);
  });

  it('locks an unknown account name the same way (lockout tells nothing about who exists)', async () => {
    for (let i = 0; i < 5; i++) expect((await refusal(tryAs('ghost', `guess ${i}`)))[1]).toBe(WRONG);
    expect((await refusal(tryAs('ghost', 'guess 5')))[1]).toBe(
      'too many failed sign-ins for this account: try again in 15 minutes',
    );
  });

  it('starts the count afresh after a successful sign-in, and after the window', async () => {
    // Arrange: 4 wrong, then the right one
    for (let i = 0; i < 4; i++) await refusal(tryAs('annlee', `guess ${i}`));
    await tryAs('annlee', 'ann-s password');
    // Act: 4 more wrong, the window passes, 4 more wrong
    for (let i = 0; i < 4; i++) await refusal(tryAs('annlee', `again ${i}`));
    f.advance(15 * 60 + 1);
    for (let i = 0; i < 4; i++) await refusal(tryAs('annlee', `later ${i}`));
    // Assert: never 5 in one window, so not locked
    expect((await tryAs('annlee', 'ann-s password')).person.uid).toBe(1);
  });

  it('throttles one source address trying many accounts', async () => {
    // Arrange: 8 failures from one address, spread over accounts (none reaches 5)
    for (let i = 0; i < 8; i++) await refusal(tryAs(`user${i % 3}`, 'guess', '198.51.100.7'));
    // Act
    const fromThere = await refusal(tryAs('annlee', 'ann-s password', '198.51.100.7'));
    const fromElsewhere = await tryAs('annlee', 'ann-s password', '198.51.100.8');
    // Assert
    expect(fromThere.slice(0, 2)).toEqual([
      429,
      'too many failed sign-ins from this address: try again in 15 minutes',
    ]);
    expect(fromElsewhere.person.uid).toBe(1);
  });

  it('gives a successful sign-in its address slot back (an office behind one address)', async () => {
    for (let i = 0; i < 12; i++) await tryAs('annlee', 'ann-s password', '203.0.113.5');
    expect(f.items.get('SIGNIN#ip#203.0.113.5|THROTTLE')?.tries).toBe(0);
    expect(f.sessions).toHaveLength(12);
  });

  it('lets the owner in from an address they signed in from while strangers elsewhere lock the account', async () => {
    // Arrange: Ann signs in from her office; then 12 wrong passwords from 12 other addresses
    await tryAs('annlee', 'ann-s password', '192.0.2.10');
    for (let i = 0; i < 12; i++) await refusal(tryAs('annlee', `guess ${i}`, `198.51.100.${i + 1}`));
    // Act
    const fromOffice = await tryAs('annlee', 'ann-s password', '192.0.2.10');
    const fromNewPlace = await refusal(tryAs('annlee', 'ann-s password', '203.0.113.99'));
    // Assert: the account is locked for addresses it does not know, not for hers
    expect(fromOffice.person.uid).toBe(1);
    expect(fromNewPlace.slice(0, 2)).toEqual([
      429,
      'too many failed sign-ins for this account: try again in 15 minutes',
    ]);
  });

  it('locks longer each time within a day (15, 30, 60 minutes)', async () => {
    const retryAfters: string[] = [];
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 5; i++) await refusal(tryAs('annlee', `guess ${round}.${i}`));
      const [, , retryAfter] = await refusal(tryAs('annlee', 'ann-s password'));
      retryAfters.push(String(retryAfter));
      f.advance(Number(retryAfter) + 1);
    }
    expect(retryAfters).toEqual(['900', '1800', '3600']);
    // A day later without a lock, the next starts at 15 minutes again.
    f.advance(86_400);
    for (let i = 0; i < 5; i++) await refusal(tryAs('annlee', `late ${i}`));
    expect((await refusal(tryAs('annlee', 'ann-s password')))[2]).toBe('900');
  });

  it('replaces a hash made with older parameters at the next successful sign-in', async () => {
    await tryAs('cy', 'old hash password');
    await refusal(tryAs('cy', 'not the password'));
    expect(f.rehashed).toEqual([3]);
  });
});
