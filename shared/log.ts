import { Logger } from '@aws-lambda-powertools/logger';

/**
 * Structured JSON logger. Never pass tokens, secrets, signatures or robot secrets to it: the
 * `redact` helper masks the keys we know to be sensitive should an object slip through.
 */
export const logger = new Logger({
  serviceName: 'tocsin',
  logLevel: (process.env.LOG_LEVEL as 'INFO' | 'WARN' | 'ERROR' | 'DEBUG' | 'SILENT' | undefined) ?? 'INFO',
});

const SENSITIVE = /token|secret|sign|password|authorization|access_token/i;

export function redact(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redact);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = SENSITIVE.test(k) ? '***' : redact(v);
    return out;
  }
  return value;
}

/**
 * One delivery outcome: a notification to one target, or one attempt of a webhook event. Targets are
 * masked where they are recorded (`uid 1 a***@example.com`, a robot's `abcd***wxyz`, a webhook's
 * origin), never an address, token or signature. On AWS a JSON line at INFO; the local runtime
 * prints it as one readable line (shared/local/terminal-log.ts).
 */
export interface DeliveryLog {
  /** `webhook`, or the notification channel (`email`, `dinggroup`, ...). */
  channel: string;
  target: string;
  outcome: string;
  /** The provider's or our reason code, or the receiver's HTTP status. */
  code?: string;
  /** The event or job id. */
  id: string;
  attempt: number;
}

export function logDelivery(d: DeliveryLog): void {
  logger.info('delivery', { ...d });
}
