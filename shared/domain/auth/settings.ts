/**
 * Sign-in settings, parsed once from the environment (failing fast on a bad value, like
 * shared/config/env.ts). Every duration is measured on the service's clock.
 */
export interface SignInSettings {
  /** A session ends after this long without a request. */
  sessionIdleSeconds: number;
  /** ...and this long after sign-in, whatever happens. */
  sessionMaxSeconds: number;
  /** Wrong passwords for one account from one address within `windowSeconds` that lock it there. */
  accountMaxFailures: number;
  /**
   * Wrong passwords for one account from addresses not known to it (no successful sign-in from
   * there in 30 days) within `windowSeconds` that lock it for such addresses.
   */
  accountWideMaxFailures: number;
  /** Failed sign-ins from one source address within `windowSeconds` that lock the address. */
  addressMaxFailures: number;
  windowSeconds: number;
  /** How long a first lock lasts; each further lock within a day lasts twice the one before... */
  lockSeconds: number;
  /** ...up to this. */
  maxLockSeconds: number;
  /** Single sign-on through OpenID Connect, when configured. */
  oidc?: OidcSettings;
}

export interface OidcSettings {
  issuer: string;
  clientId: string;
  /** The client secret itself (local runtime), or the Secrets Manager secret holding it (AWS). */
  clientSecret?: string;
  clientSecretArn?: string;
  /**
   * Take an e-mail address the provider does not mark verified (no `email_verified` claim at all):
   * only for providers that never send the claim and verify every address themselves.
   */
  allowUnverifiedEmail: boolean;
}

function int(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max)
    throw new Error(`config: ${name} must be an integer from ${min} to ${max}`);
  return n;
}

function oidcSettings(): OidcSettings | undefined {
  const issuer = process.env.OIDC_ISSUER || undefined;
  const clientId = process.env.OIDC_CLIENT_ID || undefined;
  const clientSecret = process.env.OIDC_CLIENT_SECRET || undefined;
  const clientSecretArn = process.env.OIDC_CLIENT_SECRET_ARN || undefined;
  if (!issuer && !clientId) return undefined;
  if (!issuer || !clientId) throw new Error('config: OIDC_ISSUER and OIDC_CLIENT_ID go together');
  let url: URL;
  try {
    url = new URL(issuer);
  } catch {
    throw new Error('config: OIDC_ISSUER must be a URL');
  }
  if (url.protocol !== 'https:' && !isLoopback(url.hostname))
    throw new Error('config: OIDC_ISSUER must be an https URL (http only on a loopback address)');
  const unverified = process.env.OIDC_ALLOW_UNVERIFIED_EMAIL ?? '';
  if (!['', '0', '1', 'true', 'false'].includes(unverified))
    throw new Error('config: OIDC_ALLOW_UNVERIFIED_EMAIL must be 1 or 0');
  return {
    issuer,
    clientId,
    clientSecret,
    clientSecretArn,
    allowUnverifiedEmail: unverified === '1' || unverified === 'true',
  };
}

/** 127.0.0.0/8, ::1 and localhost: a provider on this machine (the local runtime, tests). */
export function isLoopback(hostname: string): boolean {
  return /^127(?:\.\d{1,3}){3}$/.test(hostname) || hostname === '[::1]' || hostname === 'localhost';
}

export function loadSignInSettings(): SignInSettings {
  return {
    sessionIdleSeconds: int('SESSION_IDLE_MINUTES', 120, 1, 525_600) * 60,
    sessionMaxSeconds: int('SESSION_MAX_HOURS', 12, 1, 8_760) * 3600,
    accountMaxFailures: int('SIGNIN_MAX_FAILURES', 5, 1, 1000),
    accountWideMaxFailures: int('SIGNIN_ACCOUNT_MAX_FAILURES', 20, 1, 100_000),
    addressMaxFailures: int('SIGNIN_ADDRESS_MAX_FAILURES', 30, 1, 100_000),
    windowSeconds: int('SIGNIN_WINDOW_MINUTES', 15, 1, 1440) * 60,
    lockSeconds: int('SIGNIN_LOCK_MINUTES', 15, 1, 1440) * 60,
    maxLockSeconds: int('SIGNIN_LOCK_MAX_HOURS', 24, 1, 720) * 3600,
    oidc: oidcSettings(),
  };
}

let cached: SignInSettings | undefined;

export function signInSettings(): SignInSettings {
  cached ??= loadSignInSettings();
  return cached;
}

/** Tests: read the environment again. */
export function resetSignInSettings(): void {
  cached = undefined;
}
