import { ValidationError } from './errors.ts';

/**
 * Opaque paging cursors of every listing: base64url of a small JSON value. A cursor that does not
 * decode, or whose content `check` refuses, is a 422 on `cursor` (with the listing's own wording).
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
