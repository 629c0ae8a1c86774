import { maskMiddle } from '../../channels/redact.ts';
import type { NotifyOutcome } from '../repository.ts';

/** What one provider call came to. `code` is the provider's own code (errcode, SMTP/HTTP status, AWS error). */
export interface SendOutcome {
  outcome: NotifyOutcome;
  code: string;
  detail?: string;
}

export const delivered = (code = '0', detail?: string): SendOutcome => ({
  outcome: 'delivered',
  code,
  detail,
});
export const failed = (code: string, detail?: string): SendOutcome => ({ outcome: 'failed', code, detail });
export const rejected = (code: string, detail?: string): SendOutcome => ({
  outcome: 'rejected',
  code,
  detail,
});

/** Keeps provider messages short and free of phone numbers / long tokens. */
export function sanitizeDetail(text: unknown): string | undefined {
  if (text === undefined || text === null || text === '') return undefined;
  const s = typeof text === 'string' ? text : JSON.stringify(text);
  return s
    .replace(/\+?\d{7,}/g, (d) => `${d.slice(0, 3)}****`)
    .replace(/[A-Za-z0-9_-]{32,}/g, (t) => `${t.slice(0, 4)}***`)
    .slice(0, 200);
}

/** Masks all but the first and last characters of a secret-ish value. */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf('@');
  if (at < 1) return maskMiddle(email, 2);
  return `${email.slice(0, Math.min(2, at))}***${email.slice(at)}`;
}

export function maskPhone(phone: string): string {
  if (phone.length < 7) return '***';
  return `${phone.slice(0, phone.length - 8)}****${phone.slice(-4)}`;
}
