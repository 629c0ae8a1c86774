import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { createHash, createHmac, randomBytes } from 'node:crypto';
import { db, isConditionFailure, SCHEMA_VERSION, tableName } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import { UnauthorizedError } from '../errors.ts';

/**
 * The request-bound app signature (API guide §3.1.1): the interface's signature covers only
 * `appid&timestamp`, so a captured one works on any route within the time window. This one covers the
 * method, the route's path, the sorted query, a SHA-256 digest of the body, the app id, the timestamp
 * and a nonce, and each nonce is taken once: a captured request can be neither replayed nor moved to
 * another route, query or body.
 *
 * Signed text (lines joined with `\n`, no newline at the end):
 *
 *     TOCSIN-APP-SIGN-V2
 *     <METHOD>                  upper case
 *     <path>                    the route's path as in the API guide (no base path of a custom domain)
 *     <query>                   the canonical query (canonicalQuery)
 *     <hex sha256 of the body>  the body's bytes as sent (the digest of nothing for no body)
 *     <app id>
 *     <timestamp>
 *     <nonce>
 *
 * `X-App-Sign` = hex(hmac_sha256(key = app token, message = signed text)); the nonce travels in
 * `X-App-Nonce` (16 to 64 characters of `A-Z a-z 0-9 _ -`), whose presence tells this signature from
 * the interface's. A nonce is kept (`NONCE#<app>#<nonce>`, with a `ttl`) for as long as its timestamp
 * can pass the time window, so it works once.
 */
export const SIGNATURE_V2 = 'TOCSIN-APP-SIGN-V2';
const NONCE = /^[A-Za-z0-9_-]{16,64}$/;

export interface BoundRequest {
  method: string;
  path: string;
  /** The raw query string (`a=1&b=2`), as the request carried it. */
  rawQuery: string;
  /** The body's bytes (empty for none). */
  body: Buffer;
}

/** RFC 3986 percent-encoding: every byte but `A-Z a-z 0-9 - _ . ~`. */
export function encode3986(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

/**
 * The canonical query: every `name=value` pair decoded (`+` is a space), encoded again per RFC 3986,
 * sorted by name then value (code unit order), joined with `&`; a pair without `=` has an empty
 * value, empty pairs are dropped. Undefined when a pair does not decode (a malformed `%` escape).
 */
export function canonicalQuery(rawQuery: string): string | undefined {
  const pairs: [string, string][] = [];
  for (const part of rawQuery.split('&')) {
    if (part === '') continue;
    const at = part.indexOf('=');
    const [name, value] = at < 0 ? [part, ''] : [part.slice(0, at), part.slice(at + 1)];
    try {
      const decode = (s: string) => decodeURIComponent(s.replace(/\+/g, ' '));
      pairs.push([encode3986(decode(name)), encode3986(decode(value))]);
    } catch {
      return undefined;
    }
  }
  pairs.sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0));
  return pairs.map(([k, v]) => `${k}=${v}`).join('&');
}

export const bodyDigest = (body: Buffer | string): string => createHash('sha256').update(body).digest('hex');

/** The signed text of a request (undefined when its query does not decode). */
export function signedText(
  req: BoundRequest,
  appId: number | string,
  timestamp: string,
  nonce: string,
): string | undefined {
  const query = canonicalQuery(req.rawQuery);
  if (query === undefined) return undefined;
  return [
    SIGNATURE_V2,
    req.method.toUpperCase(),
    req.path,
    query,
    bodyDigest(req.body),
    appId,
    timestamp,
    nonce,
  ].join('\n');
}

/** The request-bound signature of a request, hex. */
export function signRequest(
  token: string,
  req: BoundRequest,
  appId: number | string,
  timestamp: string,
  nonce: string,
): string {
  const text = signedText(req, appId, timestamp, nonce);
  if (text === undefined) throw new Error('the query string does not decode');
  return createHmac('sha256', token).update(text).digest('hex');
}

/** A fresh nonce (22 base64url characters, 128 random bits). */
export const newNonce = (): string => randomBytes(16).toString('base64url');

export const isNonce = (value: string | undefined): value is string =>
  value !== undefined && NONCE.test(value);

/**
 * AP-A5: take a nonce of an app once: a conditional put, kept (`ttl`) until `until` (Unix seconds,
 * when its timestamp leaves the time window). 401 `signature was already used` for a nonce taken
 * before.
 */
export async function takeNonce(appId: number, nonce: string, until: number): Promise<void> {
  try {
    await db().send(
      new PutCommand({
        TableName: tableName(),
        Item: {
          ...keys.appNonce(appId, nonce),
          entity: 'app_nonce',
          schema_version: SCHEMA_VERSION,
          ttl: until,
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
  } catch (err) {
    if (isConditionFailure(err)) throw new UnauthorizedError('signature was already used');
    throw err;
  }
}
