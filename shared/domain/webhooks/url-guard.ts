import { type LookupAddress, promises as dns, lookup as dnsLookup, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';

/**
 * Server-side request forgery guard for outbound webhooks (behavior 11). When the deployment blocks
 * private targets, a webhook URL must resolve only to public unicast addresses: loopback, private,
 * link-local (the instance metadata service), CGNAT, unique-local, unspecified and multicast/reserved
 * ranges are refused, in IPv4, IPv6 and IPv4-mapped IPv6 notation.
 *
 * The check is done twice: once up front on every address the name resolves to (so a refusal is
 * recorded as `refused` and not retried), and again inside the connection's own DNS lookup
 * (`guardedLookup`), so a name that re-resolves to a private address between the two (DNS
 * rebinding) still cannot be reached.
 */
const blocked = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this network", incl. 0.0.0.0
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // CGNAT
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, instance metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.168.0.0', 16],
  ['198.18.0.0', 15], // benchmarking
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, incl. 255.255.255.255
] as const) {
  blocked.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 96], // unspecified, loopback and the deprecated IPv4-compatible form
  ['64:ff9b::', 96], // NAT64: checked again on the embedded IPv4 below
  ['fc00::', 7], // unique local (incl. fd00:ec2::254, the IPv6 metadata endpoint)
  ['fe80::', 10], // link-local
  ['fec0::', 10], // deprecated site-local
  ['ff00::', 8], // multicast
] as const) {
  blocked.addSubnet(net, prefix, 'ipv6');
}

/** The IPv4 address embedded in a NAT64 (64:ff9b::/96) address, if it is one. */
function nat64Embedded(ip: string): string | undefined {
  const m = /^64:ff9b::(?:([0-9a-f]{1,4}):([0-9a-f]{1,4})|(\d+\.\d+\.\d+\.\d+))$/i.exec(ip);
  if (!m) return undefined;
  if (m[3]) return m[3];
  const hi = Number.parseInt(m[1], 16);
  const lo = Number.parseInt(m[2], 16);
  return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`;
}

/** Whether an IP address (v4 or v6 literal) is one a webhook may not target. Non-IPs are refused. */
export function isBlockedAddress(ip: string): boolean {
  const bare = ip.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 4) return blocked.check(bare, 'ipv4');
  if (family === 6) {
    // BlockList also matches IPv4-mapped IPv6 (::ffff:a.b.c.d) against the IPv4 subnets.
    if (blocked.check(bare, 'ipv6')) {
      const embedded = nat64Embedded(bare);
      return embedded === undefined || isBlockedAddress(embedded);
    }
    return false;
  }
  return true;
}

export type LookupAll = (hostname: string) => Promise<{ address: string }[]>;

const lookupAll: LookupAll = (hostname) => dns.lookup(hostname, { all: true, verbatim: true });

export type UrlCheck = { ok: true; url: URL } | { ok: false; reason: string };

/**
 * Checks a webhook URL: http(s) only; when `blockPrivate`, every address the host resolves to must be
 * public. A name that does not resolve is not refused here (the attempt fails and is retried, as a
 * temporary DNS failure would be).
 */
export async function checkWebhookUrl(
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
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    return isBlockedAddress(host)
      ? { ok: false, reason: `address ${host} is not public` }
      : { ok: true, url };
  }
  let addresses: { address: string }[];
  try {
    addresses = await deps.lookup(host);
  } catch {
    return { ok: true, url };
  }
  const bad = addresses.find((a) => isBlockedAddress(a.address));
  return bad
    ? { ok: false, reason: `${host} resolves to ${bad.address}, which is not public` }
    : { ok: true, url };
}

/** Raised by `guardedLookup` when a connection would reach a blocked address. */
export class BlockedAddressError extends Error {
  readonly code = 'EWEBHOOKBLOCKED';
  constructor(readonly address: string) {
    super(`address ${address} is not public`);
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
    const bad = list.find((a) => isBlockedAddress(a.address));
    if (bad) return callback(new BlockedAddressError(bad.address) as NodeJS.ErrnoException, '', 0);
    if (options.all) return callback(null, list);
    return callback(null, list[0].address, list[0].family);
  });
}
