import { nowMs, nowSeconds } from '../../clock.ts';
import { config } from '../../config/env.ts';
import { perContainer } from '../../container.ts';
import { UnauthorizedError } from '../errors.ts';
import { type App, getApp } from './apps.ts';
import { type BoundRequest, isNonce, signRequest, takeNonce } from './request-signature.ts';
import { verifySignature, withinSkew } from './signature.ts';
import { timingSafeEqual } from 'node:crypto';

export interface AppCredentials {
  appId: string | undefined;
  timestamp: string | undefined;
  sign: string | undefined;
  /** `X-App-Nonce`: present, the signature is the request-bound one over `request`. */
  nonce?: string;
  request?: BoundRequest;
}

/** How long a container serves an app it read (service time, so the local test clock can pass it). */
const APP_CACHE_MS = 30_000;
const appCacheOf = perContainer(() => new Map<number, { app: App | undefined; at: number }>());

async function cachedApp(id: number, deps: AppAuthDeps): Promise<App | undefined> {
  const appCache = appCacheOf();
  const hit = appCache.get(id);
  if (hit && nowMs() - hit.at < APP_CACHE_MS && hit.app) return hit.app;
  const app = await deps.getApp(id);
  appCache.set(id, { app, at: nowMs() });
  return app;
}

export interface AppAuthDeps {
  getApp: typeof getApp;
  takeNonce: typeof takeNonce;
}

/**
 * Whether the deployment requires `app` to sign its requests bound to them
 * (`APP_REQUEST_SIGNATURE`): every app (`all`), apps holding a grant (`grants`), or only the apps
 * that opted in (`optional`, the default). An app that opted in always must.
 */
export function mustBindRequests(app: Pick<App, 'grants' | 'request_signature'>): boolean {
  const rule = config().appRequestSignature;
  return app.request_signature || rule === 'all' || (rule === 'grants' && app.grants.length > 0);
}

const sameHex = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/**
 * Application authentication (API guide §3.1): unknown app -> skew -> signature, all 401. With a
 * nonce the signature must be the request-bound one (§3.1.1) and the nonce new; without one, the
 * interface's `appid&timestamp` signature, unless the app must bind its requests.
 */
export async function authenticateApp(
  creds: AppCredentials,
  deps: AppAuthDeps = { getApp, takeNonce },
): Promise<App> {
  const id = Number(creds.appId);
  if (!creds.appId || !/^\d{1,16}$/.test(creds.appId) || !Number.isSafeInteger(id) || id <= 0)
    throw new UnauthorizedError(`app [${creds.appId ?? ''}] not found`);
  const app = await cachedApp(id, deps);
  if (!app) throw new UnauthorizedError(`app [${id}] not found`);
  const cfg = config();
  // Unix seconds as digits only, like task auth (no `1.7e9`, no fractions).
  const timestamp = creds.timestamp ?? '';
  const now = nowSeconds();
  if (!/^\d{1,12}$/.test(timestamp) || !withinSkew(Number(timestamp), now, cfg.signSkewSeconds)) {
    throw new UnauthorizedError('signature was expired');
  }
  const sign = (creds.sign ?? '').toLowerCase();
  if (creds.nonce !== undefined) {
    if (!isNonce(creds.nonce) || !creds.request || !/^[0-9a-f]{64}$/.test(sign))
      throw new UnauthorizedError('signature invalid');
    let expected: string;
    try {
      expected = signRequest(app.token, creds.request, id, timestamp, creds.nonce);
    } catch {
      throw new UnauthorizedError('signature invalid');
    }
    if (!sameHex(expected, sign)) throw new UnauthorizedError('signature invalid');
    await deps.takeNonce(id, creds.nonce, Number(timestamp) + cfg.signSkewSeconds + 1);
    return app;
  }
  if (mustBindRequests(app)) {
    throw new UnauthorizedError(
      `app [${id}] must sign its requests bound to them (X-App-Nonce, API guide §3.1.1)`,
    );
  }
  if (!sign || !verifySignature(app.token, id, timestamp, sign, cfg.legacySign)) {
    throw new UnauthorizedError('signature invalid');
  }
  return app;
}
