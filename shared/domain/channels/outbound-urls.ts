/**
 * The save-time half of the outbound URL guard (API guide §12.7): every URL a task, an alarm group or an
 * alarm report names that the service will call (the task webhook, and robot webhooks given as whole
 * URLs) must not point to a private or reserved address when the deployment blocks them. A refusal is
 * a 422 naming the field and the kind of address, never the URL (its path or query may hold a token).
 * The connection's own lookup checks again at send time (shared/outbound/client.ts).
 */
import { config } from '../../config/env.ts';
import { checkOutboundUrl, type LookupAll, lookupAll } from '../../outbound/url-guard.ts';
import { type FieldError, ValidationError } from '../errors.ts';
import { ROBOT_CHANNELS } from '../../contracts/receivers.ts';

/**
 * A robot `webhook` is either the robot's access token, sent to the deployment's robot base URL
 * (operator configuration, trusted), or a whole http(s) URL, called as given (a URL someone named).
 */
export const isRobotUrl = (webhook: unknown): webhook is string =>
  typeof webhook === 'string' && /^https?:\/\//i.test(webhook);

/**
 * A receiver as a task, an alarm group or a report override holds it. Read defensively: the webhook
 * may be a string or `{url}`, and a disabled module is stored as it was sent.
 */
export interface ReceiverLike {
  channels?: unknown;
  dispatch?: unknown;
}

export interface OutboundUrlOptions {
  /** Default: the deployment's setting (`BLOCK_PRIVATE_WEBHOOKS`). */
  blockPrivate?: boolean;
  /** Default: the system resolver. */
  lookup?: LookupAll;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null;

function webhookUrl(v: unknown): string | undefined {
  if (typeof v === 'string' && v !== '') return v;
  if (isObj(v) && typeof v.url === 'string' && v.url !== '') return v.url;
  return undefined;
}

/** The URLs a receiver (and its dispatch items' receivers) name, each with the field it sits in. */
export function namedUrls(receiver: unknown, prefix: string): { field: string; url: string }[] {
  if (!isObj(receiver)) return [];
  const out: { field: string; url: string }[] = [];
  const channels = receiver.channels;
  if (isObj(channels)) {
    const url = webhookUrl(channels.webhook);
    if (url) out.push({ field: `${prefix}.channels.webhook`, url });
    // A report override as sent by the Go SDK: a list of URLs (the first is used; all are checked).
    if (Array.isArray(channels.webhook)) {
      channels.webhook.forEach((w, i) => {
        const u = webhookUrl(w);
        if (u) out.push({ field: `${prefix}.channels.webhook.${i}`, url: u });
      });
    }
    for (const ch of ROBOT_CHANNELS) {
      const robots = channels[ch];
      if (!Array.isArray(robots)) continue;
      robots.forEach((r, i) => {
        if (isObj(r) && isRobotUrl(r.webhook))
          out.push({ field: `${prefix}.channels.${ch}.${i}.webhook`, url: r.webhook });
      });
    }
  }
  if (Array.isArray(receiver.dispatch)) {
    receiver.dispatch.forEach((d, i) => {
      if (isObj(d)) out.push(...namedUrls(d.receiver, `${prefix}.dispatch.${i}.receiver`));
    });
  }
  return out;
}

/**
 * Whether the deployment blocks private targets. Fails closed: where the configuration cannot be
 * loaded (unit tests of other modules run without one) the guard is on, as the setting's default is.
 */
function guardOn(opts: OutboundUrlOptions): boolean {
  if (opts.blockPrivate !== undefined) return opts.blockPrivate;
  try {
    return config().blockPrivateWebhooks;
  } catch {
    return true;
  }
}

/** Checks named URLs, resolving each host name once. */
async function errorsOf(
  named: { field: string; url: string }[],
  opts: OutboundUrlOptions,
): Promise<FieldError[]> {
  if (named.length === 0 || !guardOn(opts)) return [];
  const resolve = opts.lookup ?? lookupAll;
  const seen = new Map<string, ReturnType<LookupAll>>();
  const lookup: LookupAll = (host) => {
    let p = seen.get(host);
    if (!p) {
      p = resolve(host);
      seen.set(host, p);
    }
    return p;
  };
  const checks = await Promise.all(named.map((n) => checkOutboundUrl(n.url, true, { lookup })));
  const errors: FieldError[] = [];
  checks.forEach((c, i) => {
    if (c.ok) return;
    const { field } = named[i];
    if (!c.blocked) {
      errors.push({ field, message: 'must be an http(s) URL' });
      return;
    }
    const where = c.blocked.name ? `resolves to ${c.blocked.address}` : c.blocked.address;
    errors.push({
      field,
      message: `must not point to a private or reserved address (${where}, ${c.blocked.kind})`,
    });
  });
  return errors;
}

/**
 * The URL problems of one receiver (its webhook, robots given as URLs, dispatch items), fields named
 * from `fieldPrefix`: e.g. `outboundUrlErrors(report.receiver, 'receiver')` gives
 * `[{field: 'receiver.channels.dinggroup.0.webhook', message: 'must not point to a private or
 * reserved address (127.0.0.1, loopback)'}]`. Empty when the guard is off. Never throws.
 */
export function outboundUrlErrors(
  receiver: ReceiverLike | undefined,
  fieldPrefix: string,
  opts: OutboundUrlOptions = {},
): Promise<FieldError[]> {
  return errorsOf(namedUrls(receiver, fieldPrefix), opts);
}

/** A task configuration's receiver sets: its own (with dispatch), reminders' and upgrade strategies'. */
function taskReceivers(config: Record<string, unknown>): { receiver: unknown; prefix: string }[] {
  const out: { receiver: unknown; prefix: string }[] = [{ receiver: config.receiver, prefix: 'receiver' }];
  const sub = (module: string, list: string) => {
    const m = config[module];
    const items = isObj(m) ? m[list] : undefined;
    if (!Array.isArray(items)) return;
    items.forEach((x, i) => {
      if (isObj(x)) out.push({ receiver: x.receiver, prefix: `${module}.${list}.${i}.receiver` });
    });
  };
  sub('workflow', 'reminds');
  sub('upgrade', 'strategies');
  return out;
}

/** Every URL problem of a task configuration (disabled modules included: they may be enabled later). */
export function taskOutboundUrlErrors(config: object, opts: OutboundUrlOptions = {}): Promise<FieldError[]> {
  const named = taskReceivers(config as Record<string, unknown>).flatMap((r) =>
    namedUrls(r.receiver, r.prefix),
  );
  return errorsOf(named, opts);
}

/** Throws the 422 of API guide §12.7 when a task configuration names a blocked URL. */
export async function assertTaskOutboundUrls(config: object, opts: OutboundUrlOptions = {}): Promise<void> {
  const errors = await taskOutboundUrlErrors(config, opts);
  if (errors.length) throw new ValidationError(errors);
}

/** The URL problems of a directory export's alarm groups (`alarm_groups.<i>.receiver...`). */
export function alarmGroupOutboundUrlErrors(
  groups: unknown[],
  opts: OutboundUrlOptions = {},
): Promise<FieldError[]> {
  const named = groups.flatMap((g, i) =>
    isObj(g)
      ? namedUrls(
          { channels: isObj(g.receiver) ? g.receiver.channels : undefined },
          `alarm_groups.${i}.receiver`,
        )
      : [],
  );
  return errorsOf(named, opts);
}
