import type { HttpResult } from './handler.ts';

/** A 303 to `location` (the single sign-on routes answer browsers, not API clients). */
export function redirect(location: string): HttpResult {
  return {
    statusCode: 303,
    headers: { location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' },
    body: '',
  };
}

/** The console's sign-in page, told why single sign-on was refused (a fixed word, never the provider's text). */
export function signInPage(where: { origin: string; base: string }, reason: string): string {
  return `${where.origin}${where.base}/console#signin-error=${encodeURIComponent(reason)}`;
}
