import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';
import common from './data/common-passwords.json' with { type: 'json' };

/**
 * Password hashing: scrypt from node:crypto with a per-password random salt; the parameters are
 * stored with the hash so they can be raised later without invalidating what is stored. Stored form:
 * `scrypt$<log2 N>$<r>$<p>$<salt, base64url>$<hash, base64url>`.
 *
 * N = 2^17, r = 8, p = 1 (OWASP's recommendation for scrypt) costs 128 MiB and a few hundred ms per
 * hash: slow for a guesser holding a table export, affordable per sign-in (sign-in is also
 * throttled: lockout.ts). A hash made with weaker parameters is replaced at the person's next
 * successful sign-in (`needsRehash`). Passwords are NFC-normalised (the same password typed on two
 * keyboards is one password) and capped at MAX_PASSWORD_CHARS, so a huge body cannot make the
 * service hash megabytes.
 */
export const MIN_PASSWORD_CHARS = 8;
export const MAX_PASSWORD_CHARS = 256;

interface Params {
  logN: number;
  r: number;
  p: number;
}

const CURRENT: Params = { logN: 17, r: 8, p: 1 };
const KEY_BYTES = 32;
const SALT_BYTES = 16;

function derive(password: string, salt: Buffer, { logN, r, p }: Params): Promise<Buffer> {
  const N = 2 ** logN;
  return new Promise((resolve, reject) =>
    scrypt(
      password.normalize('NFC'),
      salt,
      KEY_BYTES,
      // maxmem: scrypt needs 128 * N * r bytes (and a little more); node's default cap is 32 MiB.
      { N, r, p, maxmem: 129 * N * r + 1024 * 1024 },
      (err, key) => (err ? reject(err) : resolve(key)),
    ),
  );
}

/**
 * Passwords guessers try first: the 4,000 most common of at least MIN_PASSWORD_CHARS characters in
 * the breached-password lists zxcvbn ranks by frequency (data/common-passwords.json, lower case;
 * from @zxcvbn-ts/language-common, MIT). Bundled: checking a password calls nothing.
 */
const COMMON = new Set<string>(common as string[]);

/**
 * A new password's problem, or undefined when it may be set: 8 to 256 characters, not all one
 * character repeated (`        `, `aaaaaaaa`) nor only white space, and not a common or breached
 * password (whatever its case). "Not the same as the current one" needs the stored hash: the
 * callers check it (signin.ts).
 */
export function passwordProblem(password: string): string | undefined {
  const chars = [...password];
  if (chars.length < MIN_PASSWORD_CHARS) return `must be at least ${MIN_PASSWORD_CHARS} characters`;
  if (chars.length > MAX_PASSWORD_CHARS) return `must be at most ${MAX_PASSWORD_CHARS} characters`;
  if (password.trim() === '' || new Set(chars).size === 1) return 'must not be one character repeated';
  if (COMMON.has(password.normalize('NFC').toLowerCase()))
    return 'is a common password (it appears in lists of breached passwords): choose another';
  return undefined;
}

/** Whether a stored hash was made with weaker parameters than today's: replace it at the next sign-in. */
export function needsRehash(stored: string): boolean {
  const m = STORED.exec(stored);
  if (!m) return false;
  return Number(m[1]) < CURRENT.logN || Number(m[2]) < CURRENT.r || Number(m[3]) < CURRENT.p;
}

/** The stored form of a new password (fresh salt). */
export async function hashPassword(password: string, params: Params = CURRENT): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const key = await derive(password, salt, params);
  return [
    'scrypt',
    params.logN,
    params.r,
    params.p,
    salt.toString('base64url'),
    key.toString('base64url'),
  ].join('$');
}

const STORED = /^scrypt\$(\d{1,2})\$(\d{1,2})\$(\d{1,2})\$([A-Za-z0-9_-]{16,64})\$([A-Za-z0-9_-]{16,128})$/;

/**
 * Whether `password` is the one `stored` was made from, compared in constant time. A stored value
 * that is not a hash this code made (or parameters out of range) never matches.
 */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const m = STORED.exec(stored);
  if (!m || [...password].length > MAX_PASSWORD_CHARS) return false;
  const params = { logN: Number(m[1]), r: Number(m[2]), p: Number(m[3]) };
  if (params.logN < 10 || params.logN > 20 || params.r < 1 || params.r > 32 || params.p < 1 || params.p > 16)
    return false;
  const expected = Buffer.from(m[5], 'base64url');
  const key = await derive(password, Buffer.from(m[4], 'base64url'), { ...params });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

let dummy: Promise<string> | undefined;

/**
 * Spends the time of one verification on nothing: for an unknown account, or a person without a
 * password, so a refusal takes as long as a wrong password's (no account enumeration by timing).
 */
export async function verifyNothing(password: string): Promise<false> {
  dummy ??= hashPassword(randomBytes(16).toString('hex'));
  await verifyPassword(password.slice(0, MAX_PASSWORD_CHARS), await dummy);
  return false;
}
