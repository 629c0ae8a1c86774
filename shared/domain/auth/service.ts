import { nowSeconds } from '../../clock.ts';
import { config } from '../../config/env.ts';
import { perContainer } from '../../container.ts';
import { UnauthorizedError } from '../errors.ts';
import { type App, getApp } from './apps.ts';
import { verifySignature, withinSkew } from './signature.ts';

export interface AppCredentials {
  appId: string | undefined;
  timestamp: string | undefined;
  sign: string | undefined;
}

const APP_CACHE_MS = 30_000;
const appCacheOf = perContainer(() => new Map<number, { app: App | undefined; at: number }>());

async function cachedApp(id: number, deps: { getApp: typeof getApp }): Promise<App | undefined> {
  const appCache = appCacheOf();
  const hit = appCache.get(id);
  if (hit && Date.now() - hit.at < APP_CACHE_MS && hit.app) return hit.app;
  const app = await deps.getApp(id);
  appCache.set(id, { app, at: Date.now() });
  return app;
}

/** Application authentication (API guide §3.1): unknown app -> skew -> signature, all 401. */
export async function authenticateApp(creds: AppCredentials, deps = { getApp }): Promise<App> {
  const id = Number(creds.appId);
  if (!creds.appId || !Number.isSafeInteger(id) || id <= 0)
    throw new UnauthorizedError(`app [${creds.appId ?? ''}] not found`);
  const app = await cachedApp(id, deps);
  if (!app) throw new UnauthorizedError(`app [${id}] not found`);
  const cfg = config();
  // Unix seconds as digits only, like task auth (no `1.7e9`, no fractions).
  const timestamp = creds.timestamp ?? '';
  if (!/^\d{1,12}$/.test(timestamp) || !withinSkew(Number(timestamp), nowSeconds(), cfg.signSkewSeconds)) {
    throw new UnauthorizedError('signature was expired');
  }
  if (!creds.sign || !verifySignature(app.token, id, timestamp, creds.sign.toLowerCase(), cfg.legacySign)) {
    throw new UnauthorizedError('signature invalid');
  }
  return app;
}
