import { type LookupAddress, promises as dns, lookup as dnsLookup, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';

/**
 * Server-side request forgery guard for every outbound URL a task or an alarm report can name
 * (API guide §12.7): the task webhook and robot webhooks given as whole URLs. When the deployment blocks
 * private targets, such a URL must reach only public unicast addresses.
 *
 * The check is done on the address itself, not on how it was written: IPv4 and IPv6 literals are
 * parsed to numbers (the WHATWG URL parser has already turned `2130706433`, `0x7f.1` or `127.1` into
 * `127.0.0.1` and `[::ffff:127.0.0.1]` into `[::ffff:7f00:1]`) and matched against the special-purpose
 * ranges below. An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) is the IPv4 address it maps; the
 * translation and tunnelling ranges (IPv4-translated, NAT64, 6to4, Teredo) are refused whole, since
 * the IPv4 address they lead to is not this host's to check. IPv6 outside 2000::/3 (global unicast)
 * is not assigned for public use and is refused as reserved.
 *
 * It runs at save time on every address a name resolves to (`checkOutboundUrl`), and again inside the
 * connection's own DNS lookup (`guardedLookup`), so a name that re-resolves to a private address
 * between the two (DNS rebinding) still cannot be reached. The outbound client (./client.ts) checks
 * IP-literal hosts itself, since Node does not call `lookup` for them.
 */

interface Range {
  /** The network, as a number of `bits` bits (32 or 128). */
  net: bigint;
  prefix: number;
  /** What the address is, as a message may name it. */
  kind: string;
}

function ipv4Number(ip: string): bigint {
  return ip.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

/** A valid IPv6 address (checked by isIP) as a 128-bit number; a trailing dotted quad is allowed. */
function ipv6Number(ip: string): bigint {
  let s = ip;
  const quad = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (quad) {
    const v4 = ipv4Number(quad[1]);
    s = `${s.slice(0, -quad[1].length)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head, tail] = s.split('::');
  const left = head ? head.split(':') : [];
  const right = tail === undefined ? [] : tail ? tail.split(':') : [];
  const groups =
    tail === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill('0'), ...right];
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(Number.parseInt(g, 16)), 0n);
}

const v4 = (net: string, prefix: number, kind: string): Range => ({ net: ipv4Number(net), prefix, kind });
const v6 = (net: string, prefix: number, kind: string): Range => ({ net: ipv6Number(net), prefix, kind });

/** IPv4 special-purpose ranges (IANA registry) a request may not reach; the more specific first. */
const IPV4_BLOCKED: Range[] = [
  v4('0.0.0.0', 8, 'this network'), // incl. 0.0.0.0, which connects to the local host
  v4('10.0.0.0', 8, 'private'),
  v4('100.64.0.0', 10, 'CGNAT'),
  v4('127.0.0.0', 8, 'loopback'),
  v4('169.254.169.254', 32, 'metadata'),
  v4('169.254.0.0', 16, 'link-local'),
  v4('172.16.0.0', 12, 'private'),
  v4('192.0.0.0', 24, 'IETF protocol assignment'),
  v4('192.0.2.0', 24, 'documentation'), // TEST-NET-1
  v4('192.168.0.0', 16, 'private'),
  v4('198.18.0.0', 15, 'benchmarking'),
  v4('198.51.100.0', 24, 'documentation'), // TEST-NET-2
  v4('203.0.113.0', 24, 'documentation'), // TEST-NET-3
  v4('224.0.0.0', 4, 'multicast'),
  v4('240.0.0.0', 4, 'reserved'), // incl. 255.255.255.255
];

/** IPv4-mapped IPv6 (::ffff:0:0/96): the embedded IPv4 address is what is reached. */
const IPV4_MAPPED = v6('::ffff:0:0', 96, 'IPv4-mapped');

/** IPv6 special-purpose ranges; the more specific first. Anything outside 2000::/3 is reserved. */
const IPV6_BLOCKED: Range[] = [
  v6('::', 128, 'unspecified'),
  v6('::1', 128, 'loopback'),
  v6('::', 96, 'IPv4-compatible'), // deprecated
  v6('::ffff:0:0:0', 96, 'IPv4-translated'),
  v6('64:ff9b::', 96, 'NAT64'),
  v6('64:ff9b:1::', 48, 'NAT64'),
  v6('100::', 64, 'discard'),
  v6('2001::', 32, 'Teredo'),
  v6('2001:2::', 48, 'benchmarking'),
  v6('2001:db8::', 32, 'documentation'),
  v6('2002::', 16, '6to4'),
  v6('3fff::', 20, 'documentation'),
  v6('fd00:ec2::254', 128, 'metadata'),
  v6('fc00::', 7, 'unique-local'),
  v6('fe80::', 10, 'link-local'),
  v6('fec0::', 10, 'site-local'), // deprecated
  v6('ff00::', 8, 'multicast'),
];
const GLOBAL_UNICAST = v6('2000::', 3, 'global unicast');

function inRange(n: bigint, bits: number, r: Range): boolean {
  const shift = BigInt(bits - r.prefix);
  return n >> shift === r.net >> shift;
}

/**
 * What kind of non-public address `ip` is (`loopback`, `private`, `metadata`, `NAT64`, ...), or
 * undefined for a public unicast address. Brackets and an IPv6 zone (`%eth0`) are ignored; anything
 * that is not an IP address is `not an IP address`.
 */
export function addressKind(ip: string): string | undefined {
  const bare = ip.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 4) {
    const n = ipv4Number(bare);
    return IPV4_BLOCKED.find((r) => inRange(n, 32, r))?.kind;
  }
  if (family === 6) {
    const n = ipv6Number(bare);
    if (inRange(n, 128, IPV4_MAPPED)) {
      const embedded = n & 0xffffffffn;
      return IPV4_BLOCKED.find((r) => inRange(embedded, 32, r))?.kind;
    }
    const kind = IPV6_BLOCKED.find((r) => inRange(n, 128, r))?.kind;
    if (kind) return kind;
    return inRange(n, 128, GLOBAL_UNICAST) ? undefined : 'reserved';
  }
  return 'not an IP address';
}

/** Whether an IP address (v4 or v6 literal) is one an outbound call may not target. Non-IPs are refused. */
export function isBlockedAddress(ip: string): boolean {
  return addressKind(ip) !== undefined;
}

/** The host of a URL as an IP literal (brackets removed), or undefined when it is a name. */
export function ipLiteralHost(url: URL): string | undefined {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return isIP(host) ? host : undefined;
}

export type LookupAll = (hostname: string) => Promise<{ address: string }[]>;

/** How long a save-time lookup may take; a name that does not answer in time counts as unresolved. */
const LOOKUP_TIMEOUT_MS = 2000;

/** Every address a name resolves to (the system resolver, as a connection would use it), within 2 s. */
export const lookupAll: LookupAll = (hostname) => {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error('lookup timed out')), LOOKUP_TIMEOUT_MS);
  });
  return Promise.race([dns.lookup(hostname, { all: true, verbatim: true }), timeout]).finally(() =>
    clearTimeout(timer),
  );
};

/** Refused: `address` (what the host is, or what the host name `name` resolves to) is of `kind`. */
export interface BlockedTarget {
  address: string;
  kind: string;
  name?: string;
}

export type UrlCheck = { ok: true; url: URL } | { ok: false; reason: string; blocked?: BlockedTarget };

/** The refusal text: the address and its kind, never the URL (its path or query may hold a token). */
export function blockedReason(address: string, kind: string, host?: string): string {
  return host
    ? `${host} resolves to ${address}, which is not public (${kind})`
    : `address ${address} is not public (${kind})`;
}

/**
 * Checks an outbound URL: http(s) only; when `blockPrivate`, every address the host is or resolves
 * to must be public. A name that does not resolve (or not within 2 s) is not refused here: the call
 * fails and is retried, as on a temporary DNS failure, and the connection's lookup checks it again.
 */
export async function checkOutboundUrl(
  raw: string,
  blockPrivate: boolean,
  deps: { lookup: LookupAll } = { lookup: lookupAll },
): Promise<UrlCheck> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, reason: 'invalid url' };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    return { ok: false, reason: 'unsupported scheme' };
  if (!blockPrivate) return { ok: true, url };
  const literal = ipLiteralHost(url);
  if (literal) {
    const kind = addressKind(literal);
    return kind
      ? { ok: false, reason: blockedReason(literal, kind), blocked: { address: literal, kind } }
      : { ok: true, url };
  }
  let addresses: { address: string }[];
  try {
    addresses = await deps.lookup(url.hostname);
  } catch {
    return { ok: true, url };
  }
  for (const { address } of addresses) {
    const kind = addressKind(address);
    if (kind)
      return {
        ok: false,
        reason: blockedReason(address, kind, url.hostname),
        blocked: { address, kind, name: url.hostname },
      };
  }
  return { ok: true, url };
}

/** Raised by `guardedLookup` (and the outbound client) when a connection would reach a blocked address. */
export class BlockedAddressError extends Error {
  readonly code = 'EOUTBOUNDBLOCKED';
  constructor(
    readonly address: string,
    readonly kind: string,
  ) {
    super(blockedReason(address, kind));
  }
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/** A `lookup` for http.request that refuses blocked addresses at connect time (DNS rebinding). */
export function guardedLookup(hostname: string, options: LookupOptions, callback: LookupCallback): void {
  dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '', 0);
    const list = addresses as LookupAddress[];
    for (const a of list) {
      const kind = addressKind(a.address);
      if (kind) return callback(new BlockedAddressError(a.address, kind) as NodeJS.ErrnoException, '', 0);
    }
    if (list.length === 0) {
      const none = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
      return callback(none, '', 0);
    }
    if (options.all) return callback(null, list);
    return callback(null, list[0].address, list[0].family);
  });
}
