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
