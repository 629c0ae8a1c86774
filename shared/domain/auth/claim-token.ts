import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import type { NotifyChannel } from '../tasks/templates.ts';

/**
 * Claim link tokens (API guide §11.7): the credential of `<public base URL>/claim?t=<token>`, minted
 * by the notification consumer for each recipient of a notice about a pending workflow, when the
 * message is rendered for sending. Nothing stores a token: it lives in the sent message only.
 *
 * A token is base64url (no padding) of
 *
 *   version (1 byte, 1) | key id (1 byte) | workflow id | round | uid | channel (1 byte)
 *   | expiry (4 bytes, Unix seconds, big-endian) | nonce (8 random bytes) | MAC (16 bytes)
 *
 * with the workflow id, its reactivation round and the recipient's uid (0 for a group robot's link)
 * as unsigned LEB128 varints, and the MAC the first 16 bytes of HMAC-SHA256 over everything before
 * it. The MAC key is derived from the seal key with HKDF-SHA256 (info `tocsin claim link <key id>`),
 * so a link key is never stored or configured, and a new key id is a new, independent key. About 50
 * characters: the whole link fits an SMS beside the alarm.
 *
 * Reading a token checks its form and its MAC (in constant time) and nothing else: no table read
 * happens before the MAC is known good, so a forged token costs the same work whether the workflow it
 * names exists or not. Expiry, round and state are the caller's checks (claims/).
 */
export const TOKEN_VERSION = 1;
const MAC_BYTES = 16;
const NONCE_BYTES = 8;
/** The longest token the reader looks at (a varint of a safe integer is at most 8 bytes). */
const MAX_TOKEN_CHARS = 80;

/** The channel of a link, as one byte. Codes are forever: new channels get new codes. */
const CHANNEL_CODES: Record<NotifyChannel, number> = {
  email: 1,
  sms: 2,
  phone: 3,
  wechat: 4,
  dingworker: 5,
  yachworker: 6,
  dinggroup: 7,
  yachgroup: 8,
};
const CHANNEL_OF = new Map(Object.entries(CHANNEL_CODES).map(([c, n]) => [n, c as NotifyChannel]));

/** What a token says. */
export interface ClaimLink {
  workflowId: number;
  /** The workflow's reactivation round the link was made in (API guide §10.2). */
  round: number;
  /** The recipient; 0 for a group robot's link (whoever signs in). */
  uid: number;
  channel: NotifyChannel;
  /** Unix seconds. */
  expiresAt: number;
  /** 16 hex digits: the link's identity (its use and its rate limit are kept under it). */
  nonce: string;
  /** The id of the key that signed it. */
  keyId: number;
}

/** A MAC key and its id. */
export interface LinkKey {
  id: number;
  key: Buffer;
}

const derived = new Map<string, Buffer>();

/** The link key of `id`, derived from the seal key (HKDF-SHA256). */
export function linkKey(sealKey: Buffer, id: number): LinkKey {
  if (!Number.isInteger(id) || id < 1 || id > 255) throw new Error(`claim link key id ${id}: 1 to 255`);
  const cacheKey = `${sealKey.toString('base64')}:${id}`;
  let key = derived.get(cacheKey);
  if (!key) {
    key = Buffer.from(hkdfSync('sha256', sealKey, 'tocsin', `tocsin claim link ${id}`, 32));
    derived.set(cacheKey, key);
  }
  return { id, key };
}

function varint(n: number): number[] {
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`claim link: ${n} is not a non-negative integer`);
  const out: number[] = [];
  let v = n;
  do {
    let byte = v % 128;
    v = Math.floor(v / 128);
    if (v > 0) byte |= 0x80;
    out.push(byte);
  } while (v > 0);
  return out;
}

/** A varint at `at`: its value and where the next field starts; undefined when malformed or overlong. */
function readVarint(buf: Buffer, at: number): [number, number] | undefined {
  let value = 0;
  let scale = 1;
  for (let i = at; i < buf.length && i < at + 8; i++) {
    const byte = buf[i];
    value += (byte & 0x7f) * scale;
    if ((byte & 0x80) === 0) {
      // The shortest form only (a trailing zero byte would be a second spelling of the same value).
      if (byte === 0 && i > at) return undefined;
      return Number.isSafeInteger(value) ? [value, i + 1] : undefined;
    }
    scale *= 128;
  }
  return undefined;
}

const mac = (key: Buffer, body: Buffer) =>
  createHmac('sha256', key).update(body).digest().subarray(0, MAC_BYTES);

/** A new token for `link` (a fresh nonce unless given), signed with `key`. */
export function mintClaimToken(
  link: Omit<ClaimLink, 'nonce' | 'keyId'> & { nonce?: string },
  key: LinkKey,
): string {
  const code = CHANNEL_CODES[link.channel];
  if (!code) throw new Error(`claim link: unknown channel ${link.channel}`);
  if (!Number.isInteger(link.expiresAt) || link.expiresAt < 0 || link.expiresAt > 0xffffffff)
    throw new Error('claim link: expiry out of range');
  const expiry = Buffer.alloc(4);
  expiry.writeUInt32BE(link.expiresAt);
  const nonce = link.nonce ? Buffer.from(link.nonce, 'hex') : randomBytes(NONCE_BYTES);
  if (nonce.length !== NONCE_BYTES) throw new Error('claim link: the nonce is 8 bytes');
  const body = Buffer.concat([
    Buffer.from([TOKEN_VERSION, key.id]),
    Buffer.from([...varint(link.workflowId), ...varint(link.round), ...varint(link.uid), code]),
    expiry,
    nonce,
  ]);
  return Buffer.concat([body, mac(key.key, body)]).toString('base64url');
}

const BASE64URL = /^[A-Za-z0-9_-]+$/;

/**
 * What a token says, when it is well formed and its MAC is good under one of the live keys
 * (`keyOf(id)`, undefined for an id no longer accepted); otherwise undefined, whatever was wrong.
 */
export function readClaimToken(
  token: unknown,
  keyOf: (id: number) => LinkKey | undefined,
): ClaimLink | undefined {
  if (typeof token !== 'string' || token.length > MAX_TOKEN_CHARS || !BASE64URL.test(token)) return undefined;
  const raw = Buffer.from(token, 'base64url');
  // One spelling per token: base64 lets the last character carry unused bits.
  if (raw.toString('base64url') !== token) return undefined;
  if (raw.length < 2 + 3 + 1 + 4 + NONCE_BYTES + MAC_BYTES || raw[0] !== TOKEN_VERSION) return undefined;
  const key = keyOf(raw[1]);
  if (!key) return undefined;
  const body = raw.subarray(0, raw.length - MAC_BYTES);
  if (!timingSafeEqual(mac(key.key, body), raw.subarray(raw.length - MAC_BYTES))) return undefined;
  // The MAC is good: the fields are ours. Parse them strictly all the same.
  const wf = readVarint(body, 2);
  const round = wf && readVarint(body, wf[1]);
  const uid = round && readVarint(body, round[1]);
  if (!wf || !round || !uid) return undefined;
  let at = uid[1];
  const channel = CHANNEL_OF.get(body[at]);
  at += 1;
  if (!channel || body.length !== at + 4 + NONCE_BYTES) return undefined;
  return {
    workflowId: wf[0],
    round: round[0],
    uid: uid[0],
    channel,
    expiresAt: body.readUInt32BE(at),
    nonce: body.subarray(at + 4).toString('hex'),
    keyId: key.id,
  };
}

/**
 * The claim page's form nonce (API guide §11.7): an HMAC of the token and a time slot under the
 * token's key, so only a page the service served lately can post, and an old form fails. A page
 * nonce is good for its slot and the one after.
 */
export const PAGE_SLOT_SECONDS = 600;

export function pageNonce(token: string, key: LinkKey, nowSeconds: number, slotsBack = 0): string {
  const slot = Math.floor(nowSeconds / PAGE_SLOT_SECONDS) - slotsBack;
  return createHmac('sha256', key.key).update(`page:${slot}:${token}`).digest('base64url').slice(0, 22);
}

/** Whether `nonce` is a page nonce of `token` served in this slot or the one before. */
export function pageNonceMatches(token: string, key: LinkKey, nonce: unknown, nowSeconds: number): boolean {
  if (typeof nonce !== 'string') return false;
  const got = Buffer.from(nonce);
  if (got.length !== 22) return false;
  let ok = false;
  for (const back of [0, 1]) {
    const want = Buffer.from(pageNonce(token, key, nowSeconds, back));
    // Both compared, in constant time: the answer does not tell which slot failed.
    if (timingSafeEqual(got, want)) ok = true;
  }
  return ok;
}
