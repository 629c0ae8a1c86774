import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto';

/**
 * Password hashing: scrypt from node:crypto with a per-password random salt; the parameters are
 * stored with the hash so they can be raised later without invalidating what is stored. Stored form:
 * `scrypt$<log2 N>$<r>$<p>$<salt, base64url>$<hash, base64url>`.
 *
 * N = 2^15, r = 8, p = 1 costs 32 MiB and ~50-100 ms per hash on a Lambda of 512 MB: slow for a
 * guesser holding a table export, affordable per sign-in (sign-in is also throttled: lockout.ts).
 * Passwords are NFC-normalised (the same password typed on two keyboards is one password) and capped
 * at MAX_PASSWORD_CHARS, so a huge body cannot make the service hash megabytes.
 */
export const MIN_PASSWORD_CHARS = 8;
export const MAX_PASSWORD_CHARS = 256;

interface Params {
  logN: number;
  r: number;
  p: number;
}

const CURRENT: Params = { logN: 15, r: 8, p: 1 };
const KEY_BYTES = 32;
const SALT_BYTES = 16;

function derive(password: string, salt: Buffer, { logN, r, p }: Params): Promise<Buffer> {
  const N = 2 ** logN;
  return new Promise((resolve, reject) =>
    scrypt(
      password.normalize('NFC'),
      salt,
      KEY_BYTES,
      // maxmem: scrypt needs 128 * N * r bytes; node's default cap (32 MiB) is just below N = 2^15.
      { N, r, p, maxmem: 256 * N * r },
      (err, key) => (err ? reject(err) : resolve(key)),
    ),
  );
}

/** A new password's problem (length), or undefined when it may be set. */
export function passwordProblem(password: string): string | undefined {
  const chars = [...password].length;
  if (chars < MIN_PASSWORD_CHARS) return `must be at least ${MIN_PASSWORD_CHARS} characters`;
  if (chars > MAX_PASSWORD_CHARS) return `must be at most ${MAX_PASSWORD_CHARS} characters`;
  return undefined;
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
