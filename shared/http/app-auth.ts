/**
 * The app side of a request's authentication (the handler factory's `app`, `app+task`, `app|person`,
 * `reader` and `admin` routes): the app's signature (the interface's, or the request-bound one of
 * API guide §3.1.1), the grant a route needs, the users a bound app may act as, and the log line of
 * every call an app makes as a user or with a grant.
 */
import { type App, type Grant, holds } from '../domain/auth/apps.ts';
import { audit } from '../domain/auth/audit.ts';
import type { BoundRequest } from '../domain/auth/request-signature.ts';
import { authenticateApp } from '../domain/auth/service.ts';
import { ForbiddenError } from '../domain/errors.ts';
import { header, type HttpEvent, rawBody } from './event.ts';

/** The route's path of a request (`PUT /alarmtask/status` -> `/alarmtask/status`), else the raw path. */
export function routePath(event: HttpEvent): string {
  const m = /^[A-Z]+ (\/\S*)$/.exec(event.routeKey ?? '');
  return m ? m[1] : (event.rawPath ?? '/');
}

/** What the request-bound signature covers of a request. */
export function boundRequest(event: HttpEvent): BoundRequest {
  return {
    method: (event.requestContext?.http?.method ?? 'GET').toUpperCase(),
    path: routePath(event),
    rawQuery: event.rawQueryString ?? '',
    // The bytes as sent (413 above 256 KiB, like every body).
    body:
      rawBody(event) === ''
        ? Buffer.alloc(0)
        : Buffer.from(event.body ?? '', event.isBase64Encoded ? 'base64' : 'utf8'),
  };
}

/** The app of a request (401 unless it signed it as API guide §3.1 says). */
export function authenticateRequestApp(event: HttpEvent): Promise<App> {
  const nonce = header(event, 'x-app-nonce');
  return authenticateApp({
    appId: header(event, 'x-app-id'),
    timestamp: header(event, 'x-app-timestamp'),
    sign: header(event, 'x-app-sign'),
    ...(nonce === undefined ? {} : { nonce, request: boundRequest(event) }),
  });
}

/**
 * 403 unless the app holds `grant` (or one that includes it: `admin` > `operate` > `read`). The
 * message names the missing grant and how an operator gives it.
 */
export function requireGrant(app: App, grant: Grant): void {
  if (holds(app, grant)) return;
  throw new ForbiddenError(
    `app [${app.id}] lacks the grant [${grant}]: an operator gives it with npm run admin -- app grant ${app.id} ${grant}`,
  );
}

/**
 * An app acting as user `uid`: 403 unless the app is bound to no users or to this one; then the log
 * line of the call (the app and the acting user, never a credential).
 */
export function actAs(app: App, uid: number | undefined, event: HttpEvent): void {
  if (uid !== undefined && app.uids.length > 0 && !app.uids.includes(uid)) {
    throw new ForbiddenError(
      `app [${app.id}] may not act as user [${uid}]: it acts only for the users it is bound to`,
    );
  }
  audit('app-call', {
    app: app.id,
    ...(uid === undefined ? {} : { uid }),
    route:
      event.routeKey && event.routeKey !== '$default'
        ? event.routeKey
        : `${event.requestContext?.http?.method ?? ''} ${routePath(event)}`,
  });
}
