/**
 * The claim link's answers (API guide §11.7): a small HTML page, or the envelope for a caller that
 * asks for JSON (`Accept: application/json`).
 *
 * The page is one document with nothing to fetch: no script, no image, no font, no style sheet but
 * its inline one (allowed by its hash), a form posting to this service only, no framing, `noindex`,
 * `Cache-Control: no-store` and `Referrer-Policy: no-referrer` (the address holds the link's token).
 * It works the same with scripts off. Every value it shows is escaped.
 */
import { createHash } from 'node:crypto';
import { config } from '../config/env.ts';
import { AppError } from '../domain/errors.ts';
import type { ClaimView } from '../domain/claims/model.ts';
import { SignInNeeded } from '../domain/claims/service.ts';
import { escapeHtml } from '../domain/notifications/render.ts';
import { logger } from '../log.ts';
import { envelope, errorResponse, okResponse } from './envelope.ts';
import { header, type HttpEvent, type HttpResult } from './handler.ts';
import { serviceLocation } from './session.ts';

const CSS = [
  'body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;color:#1d2433;background:#f4f6f9}',
  'main{max-width:34rem;margin:2rem auto;padding:1.5rem;background:#fff;border:1px solid #d8dde6;border-radius:8px}',
  'h1{font-size:1.35rem;margin:0 0 .75rem}',
  '.msg{padding:.6rem .8rem;border-radius:6px;margin:0 0 1rem;background:#eef3fb;border:1px solid #c9d7ee}',
  '.msg.ok{background:#eaf7ee;border-color:#b9e0c4}.msg.err{background:#fdeeee;border-color:#efc2c2}',
  'dl{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:0 0 1.25rem}',
  'dt{color:#5a6478}dd{margin:0;overflow-wrap:anywhere}',
  'code{font:13px/1.4 ui-monospace,Menlo,Consolas,monospace;white-space:pre-wrap}',
  'button,.button{display:inline-block;font:inherit;font-weight:600;padding:.6rem 1.2rem;border-radius:6px;border:0;background:#1f5fbf;color:#fff;text-decoration:none;cursor:pointer}',
  'button:focus,.button:focus{outline:3px solid #9cc0f5;outline-offset:2px}',
  '.fine{color:#5a6478;font-size:.875rem;margin:1.25rem 0 0}',
].join('\n');

const CSS_HASH = `'sha256-${createHash('sha256').update(CSS, 'utf8').digest('base64')}'`;

/** The page's policy: its inline style (by hash), an empty icon, a form posting here, nothing else. */
export const CLAIM_PAGE_CSP = [
  "default-src 'none'",
  `style-src ${CSS_HASH}`,
  'img-src data:',
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

const COMMON_HEADERS = {
  'cache-control': 'no-store',
  'referrer-policy': 'no-referrer',
  'x-robots-tag': 'noindex, nofollow',
  'x-content-type-options': 'nosniff',
};

const HTML_HEADERS = {
  ...COMMON_HEADERS,
  'content-type': 'text/html; charset=utf-8',
  'content-security-policy': CLAIM_PAGE_CSP,
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
};

/** A caller that asks for JSON (and not for HTML) gets the envelope. */
export function wantsJson(event: HttpEvent): boolean {
  const accept = (header(event, 'accept') ?? '').toLowerCase();
  return accept.includes('application/json') && !accept.includes('text/html');
}

/** The deployment's base path as this request reached it ('' at the root). */
const basePath = (event: HttpEvent) => serviceLocation(event)?.base ?? '';

/** Where a group link's claimant signs in: the console's sign-in, which comes back to this link. */
export function signInUrl(event: HttpEvent, token: string): string {
  return `${basePath(event)}/console#/claim?t=${encodeURIComponent(token)}`;
}

/** The service's own origin: the public base URL's (else the request's). */
export function ownOrigin(event: HttpEvent): string | undefined {
  const base = config().publicBaseUrl;
  return base ? new URL(base).origin : serviceLocation(event)?.origin;
}

const CHANNEL_NAMES: Record<string, string> = {
  email: 'e-mail',
  sms: 'SMS',
  phone: 'phone call',
  wechat: 'WeChat Work',
  dingworker: 'DingTalk work notice',
  yachworker: 'Yach work notice',
  dinggroup: 'DingTalk group robot',
  yachgroup: 'Yach group robot',
};

function page(title: string, inner: string): string {
  return [
    '<!doctype html>',
    '<html lang="en">',
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="robots" content="noindex, nofollow">',
    '<meta name="referrer" content="no-referrer">',
    '<link rel="icon" href="data:,">',
    `<title>${escapeHtml(title)} · tocsin</title>`,
    `<style>${CSS}</style>`,
    '</head>',
    '<body>',
    '<main>',
    inner,
    '</main>',
    '</body>',
    '</html>',
    '',
  ].join('\n');
}

const e = (v: unknown) => escapeHtml(String(v));

/** The page of a view: the workflow, what happened or why not, and the button while it is open. */
export function claimPageHtml(view: ClaimView, event: HttpEvent, token: string): string {
  const wf = view.workflow;
  const tone = view.status >= 400 ? 'err' : view.claim?.you ? 'ok' : '';
  const headline = view.offer ? `Workflow #${wf.id} is waiting to be claimed.` : view.msg;
  const rows: [string, string][] = [
    ['Task', e(wf.task.name)],
    ['Level', e(wf.level_name)],
    ['Status', e(wf.status_name)],
    ['Opened', e(wf.created_at_text)],
    ...(view.claim
      ? ([['Claimed by', `${e(view.claim.username)}, ${e(view.claim.at_text)}`]] as [string, string][])
      : []),
    ['Content', `<code>${e(wf.summary)}</code>`],
  ];
  const parts = [
    `<h1>Claim workflow #${e(wf.id)}</h1>`,
    `<p class="msg ${tone}" role="status">${e(view.offer && view.status < 400 ? headline : view.msg)}</p>`,
    '<dl>',
    ...rows.map(([k, v]) => `<dt>${k}</dt><dd>${v}</dd>`),
    '</dl>',
  ];
  if (view.offer?.claimant) {
    parts.push(
      `<form method="post" action="${e(basePath(event))}/claim">`,
      `<input type="hidden" name="t" value="${e(token)}">`,
      `<input type="hidden" name="n" value="${e(view.offer.page_nonce)}">`,
      `<button type="submit">Claim as ${e(view.offer.claimant.username || `user ${view.offer.claimant.uid}`)}</button>`,
      '</form>',
    );
  } else if (view.offer) {
    parts.push(
      `<p><a class="button" href="${e(signInUrl(event, token))}">Sign in to claim</a></p>`,
      '<p class="fine">This link came to a group: sign in to the console, and you come back here to claim.</p>',
    );
  }
  parts.push(
    `<p class="fine">A link from a ${e(CHANNEL_NAMES[view.channel] ?? view.channel)} message. It only claims; ` +
      `finish or close the workflow in the <a href="${e(basePath(event))}/console">console</a>.</p>`,
  );
  return page(`Claim workflow #${wf.id}`, parts.join('\n'));
}

/** The page of a refusal without a workflow to show (a link not valid or expired, a limit, an error). */
export function refusalPageHtml(message: string, event: HttpEvent): string {
  return page(
    'Claim link',
    [
      '<h1>Claim link</h1>',
      `<p class="msg err" role="alert">${e(message)}</p>`,
      `<p class="fine">Claim the workflow in the <a href="${e(basePath(event))}/console">console</a>.</p>`,
    ].join('\n'),
  );
}

const html = (status: number, body: string, extra: Record<string, string> = {}): HttpResult => ({
  statusCode: status,
  headers: { ...HTML_HEADERS, ...extra },
  body,
});

const withCommon = (r: HttpResult): HttpResult => ({ ...r, headers: { ...r.headers, ...COMMON_HEADERS } });

/**
 * Runs a claim link's use case and answers: the view as a page (its status) or as an envelope (code
 * 0 with the view, or its refusal code with the view as `data`); a refusal as a page or an envelope;
 * a group link without a signed-in person goes to the sign-in (JSON: 401).
 */
export async function claimAnswer(
  event: HttpEvent,
  token: unknown,
  run: () => Promise<ClaimView>,
): Promise<HttpResult> {
  const json = wantsJson(event);
  try {
    const view = await run();
    if (json) {
      return withCommon(
        view.status < 400 ? okResponse(view) : envelope(view.status, view.code, view.msg, view),
      );
    }
    return html(view.status, claimPageHtml(view, event, token as string));
  } catch (err) {
    if (err instanceof SignInNeeded && !json) {
      return {
        statusCode: 303,
        headers: { ...COMMON_HEADERS, location: signInUrl(event, token as string) },
        body: '',
      };
    }
    if (json) return withCommon(errorResponse(err, event.requestContext?.requestId));
    if (err instanceof AppError) return html(err.status, refusalPageHtml(err.message, event), err.headers);
    logger.error('unhandled error', { requestId: event.requestContext?.requestId, error: err as Error });
    return html(500, refusalPageHtml('Something went wrong: try again in a moment.', event));
  }
}

/** 403 unless `Origin`, when sent, is the service's own (`null`, sent by a no-referrer page, tells nothing). */
export function refuseForeignOrigin(event: HttpEvent): void {
  const origin = header(event, 'origin');
  if (origin === undefined || origin === 'null') return;
  if (origin !== ownOrigin(event))
    throw new AppError(403, 403, 'cross-site request refused: claim from the page of the link');
}
