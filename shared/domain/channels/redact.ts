import { isRobotUrl } from './outbound-urls.ts';

/**
 * Credentials out of what is shown or recorded: robot access tokens masked, robot secrets hidden,
 * webhook URLs without their query string. For views of a configuration (/alarmtask/view, the alarm
 * trace) and for delivery records and logs.
 */

export function maskMiddle(value: string, keep = 4): string {
  if (value.length <= keep * 2) return `${value.slice(0, 1)}***`;
  return `${value.slice(0, keep)}***${value.slice(-keep)}`;
}

/** The robot as it may appear in records and logs: the access token masked. */
export function maskRobot(webhook: string): string {
  if (!isRobotUrl(webhook)) return maskMiddle(webhook);
  try {
    const url = new URL(webhook);
    const token = url.searchParams.get('access_token');
    if (token) return `${url.origin}${url.pathname}?access_token=${maskMiddle(token)}`;
    return `${url.origin}/${maskMiddle(url.pathname.replace(/^\//, ''))}`;
  } catch {
    return maskMiddle(webhook);
  }
}

function webhookOrigin(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}${u.search ? '?…' : ''}`;
  } catch {
    return '(invalid URL)';
  }
}

/** Credentials out of a configuration, at any depth (receivers, dispatch items, upgrades, reminders). */
export function redact(value: unknown, key = ''): unknown {
  if (Array.isArray(value)) return value.map((v) => redact(v, key));
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    // A robot: {webhook, secret} (in a robot channel, also without a secret).
    if (typeof o.webhook === 'string' && ('secret' in o || key === 'dinggroup' || key === 'yachgroup')) {
      return { ...o, webhook: maskRobot(o.webhook), secret: o.secret ? '(set)' : '' };
    }
    // The task webhook in the detail view: {url}.
    if (key === 'webhook' && typeof o.url === 'string')
      return { ...o, url: o.url ? webhookOrigin(o.url) : '' };
    return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, redact(v, k)]));
  }
  if (key === 'webhook' && typeof value === 'string' && value !== '') return webhookOrigin(value);
  return value;
}
