import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto';
import { perContainer } from '../../container.ts';
import { config } from '../../config/env.ts';
import { sdkClient } from '../../platform.ts';

/**
 * Tokens and secrets are stored sealed with AES-256-GCM so that a table export does not expose
 * them; the signing schemes need the plain value, so hashing is not an option. The key comes from
 * SEAL_KEY (local runtime) or a Secrets Manager secret read once at cold start (AWS).
 * Sealed form: `v1:<iv b64>:<tag b64>:<ciphertext b64>`.
 */
const loaded = perContainer((): { key?: Buffer } => ({}));

export async function loadSealKey(): Promise<Buffer> {
  const state = loaded();
  if (state.key) return state.key;
  const cfg = config();
  if (cfg.sealKey) {
    state.key = cfg.sealKey;
    return state.key;
  }
  const { SecretsManagerClient, GetSecretValueCommand } = await import('@aws-sdk/client-secrets-manager');
  const sm = sdkClient('secretsmanager', (s) => new SecretsManagerClient({ region: cfg.region, ...s }));
  const out = await sm.send(new GetSecretValueCommand({ SecretId: cfg.sealKeySecretArn }));
  state.key = sealKeyFromSecretString(out.SecretString ?? '');
  return state.key;
}

/**
 * The seal key held by a Secrets Manager secret. A secret that is canonical base64 of exactly 32 bytes
 * is used as is (a key made with `openssl rand -base64 32`); any other string (the CDK-generated
 * secret is 64 random alphanumerics) is stretched to 32 bytes with sha256. Short strings are refused
 * so that a placeholder can never become a key.
 */
export function sealKeyFromSecretString(secret: string): Buffer {
  const raw = Buffer.from(secret, 'base64');
  if (raw.length === 32 && raw.toString('base64') === secret) return raw;
  if (secret.length < 32)
    throw new Error('seal key secret must be base64 of 32 bytes or at least 32 characters');
  return createHash('sha256').update(secret, 'utf8').digest();
}

function currentKey(): Buffer {
  const state = loaded();
  if (!state.key) {
    const cfg = config();
    if (!cfg.sealKey) throw new Error('seal key not loaded: call loadSealKey() first');
    state.key = cfg.sealKey;
  }
  return state.key;
}

function sealWith(plain: string, iv: Buffer): string {
  const cipher = createCipheriv('aes-256-gcm', currentKey(), iv);
  const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return `v1:${iv.toString('base64')}:${cipher.getAuthTag().toString('base64')}:${data.toString('base64')}`;
}

export function seal(plain: string): string {
  return sealWith(plain, randomBytes(12));
}

/** The key the IVs of stable seals are derived with (separate from the seal key, derived from it). */
let ivKey: { of: Buffer; key: Buffer } | undefined;

/**
 * A seal that is the same for the same plain text: its IV is the first 96 bits of an HMAC-SHA256 of
 * the text under a key derived from the seal key (a synthetic IV), so an IV repeats only with its
 * text, and two sealed values compare equal exactly when their plain texts do (what robots are
 * de-duplicated by without being opened). That equality is all it reveals beyond `seal`. Opened by
 * `unseal` like any sealed value.
 */
export function sealStable(plain: string): string {
  const key = currentKey();
  if (ivKey?.of !== key)
    ivKey = { of: key, key: createHmac('sha256', key).update('tocsin stable seal iv').digest() };
  return sealWith(plain, createHmac('sha256', ivKey.key).update(plain, 'utf8').digest().subarray(0, 12));
}

/**
 * A keyed digest of `text` (hex HMAC-SHA256 under a key derived from the seal key for `purpose`): a
 * value that names something without revealing it, and that nobody without the key can compute
 * from a guess (what sign-in keeps of an account name nobody has: it may be a password).
 */
export function keyedDigest(purpose: string, text: string): string {
  const key = createHmac('sha256', currentKey()).update(`tocsin keyed digest: ${purpose}`).digest();
  return createHmac('sha256', key).update(text, 'utf8').digest('hex');
}

/** The form of a sealed value (`v1:` + 12-byte IV + 16-byte tag + ciphertext, base64): its marker. */
const SEALED =
  /^v1:[A-Za-z0-9+/]{16}:[A-Za-z0-9+/]{22}==:(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** Whether a stored value is sealed; a value without the marker was written in plain (before sealing). */
export function isSealed(value: string): boolean {
  return SEALED.test(value);
}

export function unseal(sealed: string): string {
  const [v, iv, tag, data] = sealed.split(':');
  if (v !== 'v1' || !iv || !tag || data === undefined) throw new Error('unsupported sealed value');
  const decipher = createDecipheriv('aes-256-gcm', currentKey(), Buffer.from(iv, 'base64'));
  decipher.setAuthTag(Buffer.from(tag, 'base64'));
  return Buffer.concat([decipher.update(Buffer.from(data, 'base64')), decipher.final()]).toString('utf8');
}
