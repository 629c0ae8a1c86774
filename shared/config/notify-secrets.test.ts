import { randomBytes } from 'node:crypto';
import {
  GetSecretValueCommand,
  ResourceNotFoundException,
  SecretsManagerClient,
} from '@aws-sdk/client-secrets-manager';
import { mockClient } from 'aws-sdk-client-mock';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  assertNotifySecretsLoaded,
  config,
  loadNotifyConfig,
  loadNotifySecrets,
  type NotifySecretsDeps,
  parseNotifySecrets,
  resetConfig,
  resetNotifySecrets,
} from './env.ts';
import { fetchSecret } from './secrets.ts';

/** Provider credentials from the NOTIFY_SECRETS_ARN secret, over the plain variables (no network: fetch injected). */
const ARN = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:tocsin-notify';
const saved = { ...process.env };

/** Work notices and SMTP fully configured through variables, with env-side credentials. */
const BASE_ENV = {
  TABLE_NAME: 'tocsin-test',
  AWS_REGION: 'eu-west-1',
  SEAL_KEY: randomBytes(32).toString('base64'),
  DING_WORK_APPKEY: 'ding-key',
  DING_WORK_AGENT_ID: '7',
  DING_WORK_APPSECRET: 'env-ding',
  YACH_WORK_APPKEY: 'yach-key',
  WECHAT_CORP_ID: 'corp',
  WECHAT_AGENT_ID: '9',
  WECHAT_CORP_SECRET: 'env-wechat',
  SMTP_HOST: 'mail.local',
  EMAIL_FROM: 'a@b.c',
  SMTP_USER: 'alarm',
  SMTP_PASS: 'env-smtp',
};

function fakeFetch(secretString: string) {
  const calls: { secretId: string; region: string }[] = [];
  const deps: NotifySecretsDeps = {
    fetchSecret: async (secretId, region) => {
      calls.push({ secretId, region });
      return secretString;
    },
  };
  return { calls, deps };
}

beforeEach(() => {
  for (const k of Object.keys(process.env)) delete process.env[k];
  Object.assign(process.env, saved, BASE_ENV);
  delete process.env.NOTIFY_SECRETS_ARN;
  delete process.env.YACH_WORK_APPSECRET;
  resetConfig();
  resetNotifySecrets();
});

afterEach(() => {
  for (const k of Object.keys(process.env)) delete process.env[k];
  Object.assign(process.env, saved);
  resetConfig();
  resetNotifySecrets();
});

describe('loadNotifyConfig with secrets', () => {
  it('lets a secret value override the variable and falls back to the variable otherwise', () => {
    // Act
    const c = loadNotifyConfig(false, { SMTP_PASS: 'sm-smtp', YACH_WORK_APPSECRET: 'sm-yach' });
    // Assert
    expect(c.email).toMatchObject({ provider: 'smtp', user: 'alarm', pass: 'sm-smtp' });
    expect(c.yachworker).toMatchObject({ appKey: 'yach-key', appSecret: 'sm-yach' });
    expect(c.dingworker?.appSecret).toBe('env-ding');
    expect(c.wechat?.corpSecret).toBe('env-wechat');
  });
});

describe('parseNotifySecrets', () => {
  it('keeps the known keys and treats empty values as unset', () => {
    expect(
      parseNotifySecrets(
        '{"DING_WORK_APPSECRET":"d","YACH_WORK_APPSECRET":"","WECHAT_CORP_SECRET":"w","SMTP_PASS":""}',
      ),
    ).toEqual({ DING_WORK_APPSECRET: 'd', WECHAT_CORP_SECRET: 'w' });
  });

  it.each([
    ['not json', 'p@ss-not-json', /must be a JSON object/],
    ['an array', '["p@ss"]', /must be a JSON object/],
    ['an unknown key', '{"SMTP_PASSWORD":"p@ss"}', /unknown key "SMTP_PASSWORD"/],
    ['a non-string value', '{"SMTP_PASS":12345}', /SMTP_PASS .* must be a string/],
  ])('refuses %s without quoting the value', (_, secretString, message) => {
    let error: Error | undefined;
    try {
      parseNotifySecrets(secretString);
    } catch (err) {
      error = err as Error;
    }
    expect(error?.message).toMatch(message);
    expect(error?.message).not.toContain('p@ss');
    expect(error?.message).not.toContain('12345');
  });
});

describe('loadNotifySecrets', () => {
  it('reads the secret once per cold start and overrides an already parsed config', async () => {
    // Arrange
    process.env.NOTIFY_SECRETS_ARN = ARN;
    const before = config();
    expect(before.notify.email).toMatchObject({ pass: 'env-smtp' });
    expect(() => assertNotifySecretsLoaded()).toThrow(/loadNotifySecrets/);
    const { calls, deps } = fakeFetch('{"SMTP_PASS":"sm-smtp","WECHAT_CORP_SECRET":"sm-wechat"}');
    // Act
    await Promise.all([loadNotifySecrets(deps), loadNotifySecrets(deps)]);
    await loadNotifySecrets(deps);
    // Assert
    expect(calls).toEqual([{ secretId: ARN, region: 'eu-west-1' }]);
    expect(() => assertNotifySecretsLoaded()).not.toThrow();
    expect(config()).toBe(before);
    expect(config().notify.email).toMatchObject({ pass: 'sm-smtp' });
    expect(config().notify.wechat?.corpSecret).toBe('sm-wechat');
    expect(config().notify.dingworker?.appSecret).toBe('env-ding');
    resetConfig();
    expect(config().notify.email).toMatchObject({ pass: 'sm-smtp' });
  });

  it('reads nothing without NOTIFY_SECRETS_ARN and keeps the variables', async () => {
    // Arrange
    const { calls, deps } = fakeFetch('{"SMTP_PASS":"sm-smtp"}');
    // Act
    await loadNotifySecrets(deps);
    // Assert
    expect(calls).toEqual([]);
    expect(() => assertNotifySecretsLoaded()).not.toThrow();
    expect(config().notify.email).toMatchObject({ pass: 'env-smtp' });
  });

  it('does not remember a failed read: the next invocation tries again', async () => {
    // Arrange
    process.env.NOTIFY_SECRETS_ARN = ARN;
    let attempts = 0;
    const deps: NotifySecretsDeps = {
      fetchSecret: async () => {
        attempts++;
        if (attempts === 1) throw new Error('AccessDeniedException');
        return '{"DING_WORK_APPSECRET":"sm-ding"}';
      },
    };
    // Act + Assert
    await expect(loadNotifySecrets(deps)).rejects.toThrow('AccessDeniedException');
    expect(() => assertNotifySecretsLoaded()).toThrow(/loadNotifySecrets/);
    await loadNotifySecrets(deps);
    expect(attempts).toBe(2);
    expect(config().notify.dingworker?.appSecret).toBe('sm-ding');
  });
});

describe('a provider secret with no value (as the stack creates it)', () => {
  // Secrets Manager has no local emulator: only a mocked client can answer "no value yet".
  const sm = mockClient(SecretsManagerClient);
  afterAll(() => sm.restore());
  afterEach(() => sm.reset());

  /** What the notification consumer sees in AWS: the settings of -c notify, no credential variable. */
  function awsEnvironment() {
    process.env.NOTIFY_SECRETS_ARN = ARN;
    for (const k of ['DING_WORK_APPSECRET', 'WECHAT_CORP_SECRET', 'SMTP_PASS']) delete process.env[k];
  }

  it('reads as no credentials: the consumer starts and the providers that need one are off', async () => {
    // Arrange
    awsEnvironment();
    sm.on(GetSecretValueCommand, { SecretId: ARN }).rejects(
      new ResourceNotFoundException({
        message: "Secrets Manager can't find the specified secret value for staging label: AWSCURRENT",
        $metadata: {},
      }),
    );
    // Act
    await loadNotifySecrets({ fetchSecret });
    // Assert
    expect(sm.commandCalls(GetSecretValueCommand)).toHaveLength(1);
    expect(() => assertNotifySecretsLoaded()).not.toThrow();
    expect(config().notify.dingworker).toBeUndefined();
    expect(config().notify.wechat).toBeUndefined();
    expect(config().notify.yachworker).toBeUndefined();
    expect(config().notify.email).toMatchObject({ provider: 'smtp', pass: undefined });
  });

  it('reads an empty string as no credentials too', async () => {
    // Arrange
    awsEnvironment();
    const { deps } = fakeFetch('');
    // Act
    await loadNotifySecrets(deps);
    // Assert
    expect(config().notify.dingworker).toBeUndefined();
    expect(config().notify.email).toMatchObject({ pass: undefined });
  });

  it('uses the values once the operator has put them', async () => {
    // Arrange
    awsEnvironment();
    sm.on(GetSecretValueCommand, { SecretId: ARN }).resolves({
      SecretString: '{"DING_WORK_APPSECRET":"sm-ding"}',
    });
    // Act
    await loadNotifySecrets({ fetchSecret });
    // Assert
    expect(config().notify.dingworker?.appSecret).toBe('sm-ding');
  });

  it('still fails on any other error (the next invocation retries)', async () => {
    // Arrange
    awsEnvironment();
    sm.on(GetSecretValueCommand).rejects(
      Object.assign(new Error('denied'), { name: 'AccessDeniedException' }),
    );
    // Act + Assert
    await expect(loadNotifySecrets({ fetchSecret })).rejects.toThrow('denied');
    expect(() => assertNotifySecretsLoaded()).toThrow(/loadNotifySecrets/);
  });
});
