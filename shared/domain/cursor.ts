import { ValidationError } from './errors.ts';

/**
 * Opaque paging cursors of every listing: base64url of a small JSON value. A cursor that does not
 * decode, or whose content `check` refuses, is a 422 on `cursor` (with the listing's own wording).
 *
 * A cursor is not signed: it only says where in the caller's own, already authorised partition a
 * read resumes (the partition always comes from the request), so each listing's `check` validates
 * every part against the exact form the service writes (key formats, ranges, types). A value that
 * passes can only position a read, never make its query invalid or widen it.
 */
export function encodeCursor(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64url');
}

export function decodeCursor<T>(
  cursor: string,
  check: (value: unknown) => value is T,
  message = 'is not a valid cursor',
): T {
  let value: unknown;
  try {
    if (!/^[A-Za-z0-9_-]+$/.test(cursor)) throw new Error('not base64url');
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw ValidationError.of('cursor', message);
  }
  if (!check(value)) throw ValidationError.of('cursor', message);
  return value;
}

/** Entries of one log or job item a cursor may say were read (far above what an item holds). */
export const MAX_ITEM_ENTRIES = 100_000;

/** A count of entries already read within one item: an integer 0..MAX_ITEM_ENTRIES. */
export const isEntryCount = (v: unknown): v is number =>
  Number.isSafeInteger(v) && (v as number) >= 0 && (v as number) <= MAX_ITEM_ENTRIES;

/**
 * A time-ordered sort key as the service writes them (`keys.ts`: `<13-digit ms>#<id>`): the id is
 * printable ASCII (hex content ids, uuids, job ids), and the key fits DynamoDB's 1,024 bytes.
 */
const TIMED_SORT_KEY = /^\d{13}#[\x21-\x7e]{1,1000}$/;
export const isTimedSortKey = (v: unknown): v is string => typeof v === 'string' && TIMED_SORT_KEY.test(v);

/** The milliseconds a timed sort key starts with. */
export const msOfTimedSortKey = (sk: string): number => Number(sk.slice(0, 13));
