import { serviceNow } from './api.ts';

export { LEVEL_NAMES as LEVELS } from '../../contracts/levels.ts';
export const OUTCOMES = ['notified', 'deferred', 'compressed', 'filtered', 'recovered', 'stored'] as const;
/**
 * The history's outcomes in words. `notified` is the pipeline's decision to send the alarm to its
 * receivers, not proof that anyone got it, so it reads `sent`; the trace says who was reached.
 */
export const OUTCOME_LABELS: Record<string, string> = { notified: 'sent' };
export const outcomeLabel = (outcome: string): string => OUTCOME_LABELS[outcome] ?? outcome;
export const TASK_STATUS: Record<number, string> = { 0: 'stopped', 1: 'running', 2: 'paused' };
/** The workflow statuses by number, named as GET /workflow/counts names its counts. */
export const WORKFLOW_STATUS: Record<number, 'pending' | 'processing' | 'done' | 'closed'> = {
  0: 'pending',
  1: 'processing',
  2: 'done',
  9: 'closed',
};
/** Pipeline records: the workflow statuses plus 3 remind, 4 assign, 5 reactivate. */
export const PIPELINE_STATUS: Record<number, string> = {
  0: 'created (pending)',
  1: 'claimed',
  2: 'finished (done)',
  3: 'reminder sent',
  4: 'assigned',
  5: 'reactivated',
  9: 'closed',
};

const pad = (n: number) => String(n).padStart(2, '0');

/** `2026-05-01 13:04:05` in this browser's time zone. */
export function dateTime(seconds: number | undefined): string {
  if (!seconds) return '—';
  const d = new Date(seconds * 1000);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(
    d.getMinutes(),
  )}:${pad(d.getSeconds())}`;
}

export function clock(seconds: number): string {
  const d = new Date(seconds * 1000);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** `3 min ago`, by the service's clock. */
export function ago(seconds: number | undefined): string {
  if (!seconds) return '';
  const d = serviceNow() - seconds;
  if (d < -5) return 'in the future';
  if (d < 60) return `${Math.max(0, d)} s ago`;
  if (d < 3600) return `${Math.floor(d / 60)} min ago`;
  if (d < 86_400) return `${Math.floor(d / 3600)} h ago`;
  return `${Math.floor(d / 86_400)} d ago`;
}

export function duration(ms: number | undefined): string {
  if (ms === undefined) return '';
  return ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** Compact one-line JSON, cut to `max` characters. */
export function compact(value: unknown, max = 160): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  if (text === undefined) return '';
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** Keys that name an alarm, shown first in a summary (also under `labels`, as monitors send them). */
const NAMING_KEYS = ['alertname', 'host', 'hostname', 'instance'];

/** Text cut to `max` characters at a word boundary when there is one, with `…`. */
export function cut(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = text.slice(0, max - 1);
  // A word that ends right at the cut stays whole.
  if (text[max - 1] === ' ') return `${head.trimEnd()}…`;
  const space = head.lastIndexOf(' ');
  return `${space > max / 2 ? head.slice(0, space) : head}…`;
}

/**
 * An alarm's content in a line (`alertname DiskFull · host web-1`): the keys that name it when it has
 * them (alertname, host, hostname, instance; an Alertmanager alert's under `labels`), else its first
 * keys; values cut cleanly, whole pairs dropped past `max` characters. Content that is no JSON object
 * is shown as text.
 */
export function summary(ctn: unknown, max = 90): string {
  let value = ctn;
  if (typeof ctn === 'string') {
    try {
      value = JSON.parse(ctn);
    } catch {
      return cut(ctn, max);
    }
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) return cut(compact(value, max * 2), max);
  const o = value as Record<string, unknown>;
  const labels = o.labels && typeof o.labels === 'object' ? (o.labels as Record<string, unknown>) : {};
  const scalar = (v: unknown) => ['string', 'number', 'boolean'].includes(typeof v);
  const named = NAMING_KEYS.flatMap((k) => {
    const v = o[k] ?? labels[k];
    return scalar(v) ? [[k, v] as const] : [];
  });
  const pairs = named.length > 0 ? named : Object.entries(o);
  const parts: string[] = [];
  let length = 0;
  for (const [k, v] of pairs) {
    const part = `${k} ${cut(scalar(v) ? String(v) : compact(v, 80), 40)}`;
    if (parts.length > 0 && length + part.length + 3 > max) {
      parts.push('…');
      break;
    }
    parts.push(part);
    length += part.length + 3;
  }
  return parts.join(' · ') || '{}';
}

/** A webhook URL shown by its origin and path only (its query may carry a token). */
export function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname}${u.search ? '?…' : ''}`;
  } catch {
    return url.includes('?') ? `${url.split('?')[0]}?…` : url;
  }
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** What a receiver or provider answered: status, code and error, without saying the same thing twice. */
export function answer(d: { status?: number; code?: string; error?: string; detail?: string }): string {
  const parts = [d.status !== undefined ? `HTTP ${d.status}` : '', d.code ?? '', d.error ?? d.detail ?? ''];
  return parts.filter((p, i) => p && parts.indexOf(p) === i).join(' · ');
}
