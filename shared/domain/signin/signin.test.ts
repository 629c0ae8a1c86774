import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { User } from '../directory/model.ts';
import { AppError } from '../errors.ts';
import type { Limits, Slot } from '../auth/lockout.ts';
import { hashPassword } from '../auth/passwords.ts';
import { resetSignInSettings } from '../auth/settings.ts';
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

interface Item {
  tries: number;
  window_start: number;
  locked_until?: number;
}

function fakes(passwords: Map<number, string>) {
  let now = 1_800_000_000;
  const items = new Map<string, Item>();
  const sessions: number[] = [];
  const deps: SignInDeps = {
    findUsers: async (name) =>
      [ANN, BO].filter((u) => u.user === name.toLowerCase() || u.email === name.toLowerCase()),
    getCredential: async (uid) => (passwords.has(uid) ? { password: passwords.get(uid) } : undefined),
    takeSlot: async (subject: string, limits: Limits, at: number): Promise<Slot> => {
      const it = items.get(subject);
      const unlocked = !it?.locked_until || it.locked_until <= at;
      const cut = at - limits.windowSeconds;
      if (it && it.window_start > cut && it.tries < limits.max && unlocked) {
        it.tries++;
        return { taken: true, tries: it.tries };
      }
      if (!it || (it.window_start <= cut && unlocked)) {
        items.set(subject, { tries: 1, window_start: at });
        return { taken: true, tries: 1 };
      }
      return {
        taken: false,
        until: Math.max(it.locked_until ?? 0, it.window_start + limits.windowSeconds, at + 1),
      };
    },
    lock: async (subject, limits, at) => {
      const it = items.get(subject);
      if (it) it.locked_until = at + limits.lockSeconds;
    },
    clearSlots: async (subject, at) => {
      const it = items.get(subject);
      if (!it?.locked_until || it.locked_until <= at) items.delete(subject);
    },
    returnSlot: async (subject) => {
      const it = items.get(subject);
      if (it && it.tries > 0) it.tries--;
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
  return { deps, sessions, items, advance: (s: number) => (now += s) };
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
  process.env.SIGNIN_ADDRESS_MAX_FAILURES = '8';
  resetSignInSettings();
  passwords = new Map([[1, await hashPassword('ann-s password')]]);
});

afterAll(() => {
  delete process.env.SIGNIN_ADDRESS_MAX_FAILURES;
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
    expect(f.items.get('ip#203.0.113.5')?.tries).toBe(0);
    expect(f.sessions).toHaveLength(12);
  });
});
