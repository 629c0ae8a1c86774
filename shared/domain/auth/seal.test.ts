import { createHash, randomBytes } from 'node:crypto';
import { GetSecretValueCommand, SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resetConfig } from '../../config/env.ts';
import { isSealed, loadSealKey, seal, sealKeyFromSecretString, sealStable, unseal } from './seal.ts';

describe('sealKeyFromSecretString', () => {
  it('uses a canonical base64 secret of 32 bytes as the key itself', () => {
    // Arrange
    const bytes = randomBytes(32);
    // Act
    const key = sealKeyFromSecretString(bytes.toString('base64'));
    // Assert
    expect(key.equals(bytes)).toBe(true);
  });

  it('derives sha256(secret) from a generated alphanumeric secret', () => {
    // Arrange: what Secrets Manager generates for the CDK stack (64 chars, no punctuation)
    const secret = 'aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1eF3hJ5kL7nP9rS1uV3xY5zA7cD9fG1iK3m';
    // Act
    const key = sealKeyFromSecretString(secret);
    // Assert
    expect(key).toHaveLength(32);
    expect(key.equals(createHash('sha256').update(secret).digest())).toBe(true);
  });

  it('derives a key from a string that decodes to 32 bytes only leniently (not canonical base64)', () => {
    // Arrange: 44 chars of the base64 alphabet, but with trailing junk that Buffer.from silently drops
    const canonical = randomBytes(32).toString('base64');
    const secret = `${canonical}!!`;
    // Act
    const key = sealKeyFromSecretString(secret);
    // Assert
    expect(key.equals(Buffer.from(canonical, 'base64'))).toBe(false);
    expect(key.equals(createHash('sha256').update(secret).digest())).toBe(true);
  });

  it.each(['', 'changeme', 'x'.repeat(31)])('refuses the short secret %j', (secret) => {
    expect(() => sealKeyFromSecretString(secret)).toThrow(/at least 32 characters/);
  });
});

describe('loadSealKey from Secrets Manager', () => {
  const sm = mockClient(SecretsManagerClient);
  const secret = 'Zq8Lr2Vt6Xn0Bp4Dk9Fh3Jm7Ns1Qw5Ey8Gu2Ic6Ka0Mo4Pr8St2Uv6Wx0Yz4Ab8Cd';
  const saved = { ...process.env };

  beforeAll(() => {
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';
    process.env.TABLE_NAME = 'tocsin-test';
    process.env.AWS_REGION = 'eu-west-1';
    process.env.SEAL_KEY = '';
    process.env.SEAL_KEY_SECRET_ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:tocsin-seal-key';
    resetConfig();
    sm.on(GetSecretValueCommand, { SecretId: process.env.SEAL_KEY_SECRET_ARN }).resolves({
      SecretString: secret,
    });
  });

  afterAll(() => {
    sm.restore();
    process.env = saved;
    resetConfig();
  });

  it('reads the secret once and seals with the derived key', async () => {
    // Act
    const key = await loadSealKey();
    await loadSealKey();
    const sealed = seal('robot-secret');
    // Assert
    expect(key.equals(createHash('sha256').update(secret).digest())).toBe(true);
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(1);
    expect(sealed).not.toContain('robot-secret');
    expect(unseal(sealed)).toBe('robot-secret');
  });
});

describe('stable seals and the sealed marker', () => {
  const saved = { ...process.env };

  beforeAll(() => {
    process.env.TABLE_NAME = 'unit';
    process.env.SEAL_KEY = Buffer.alloc(32, 9).toString('base64');
    process.env.SEAL_KEY_SECRET_ARN = '';
    resetConfig();
  });

  afterAll(() => {
    process.env = saved;
    resetConfig();
  });

  it('seals the same text to the same value, other texts to other values, and opens them', () => {
    // Act
    const a = sealStable('0123456789abcdef0123456789abcdef');
    const again = sealStable('0123456789abcdef0123456789abcdef');
    const b = sealStable('0123456789abcdef0123456789abcdeg');
    // Assert
    expect(again).toBe(a);
    expect(b).not.toBe(a);
    expect(a.split(':')[1]).not.toBe(b.split(':')[1]);
    expect(a).not.toContain('0123456789abcdef');
    expect(unseal(a)).toBe('0123456789abcdef0123456789abcdef');
    expect(unseal(sealStable(''))).toBe('');
  });

  it('refuses a stable seal whose ciphertext was changed', () => {
    const [v, iv, tag, data] = sealStable('SECabc').split(':');
    const flipped = Buffer.from(data, 'base64');
    flipped[0] ^= 1;
    expect(() => unseal([v, iv, tag, flipped.toString('base64')].join(':'))).toThrow();
  });

  it.each([
    ['a seal', true, () => seal('robot-token')],
    ['a stable seal', true, () => sealStable('https://oapi.dingtalk.com/robot/send?access_token=abc')],
    ['a stable seal of nothing', true, () => sealStable('')],
    ['an access token', false, () => 'a'.repeat(64)],
    ['a robot URL', false, () => 'https://oapi.dingtalk.com/robot/send?access_token=abc'],
    ['a signing secret', false, () => 'SEC0123456789abcdef'],
    ['a value that only starts like one', false, () => 'v1:abc:def:ghi'],
    ['a seal with a line after it', false, () => `${seal('x')}\n`],
  ])('tells %s: sealed %s', (_label, sealed, value) => {
    expect(isSealed(value())).toBe(sealed);
  });
});
