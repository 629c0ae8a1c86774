import type { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { NOTIFY_SECRET_VARIABLES } from './constructs/notify-providers.ts';
import { NOTIFY_SECRET_NAMES } from '../shared/config/env.ts';
import { queues } from './consumers.ts';
import {
  actionsOn,
  allActions,
  functionFor,
  functionOf,
  type FunctionSpec,
  functionSpecs,
  labelOf,
  refOfOutput,
  type Resource,
  resources,
  type Statement,
  statementsOf,
  synth,
  SYNTH_TIMEOUT_MS,
  synthOnce,
  withResources,
  template,
} from './test-stack.ts';

beforeAll(synthOnce, SYNTH_TIMEOUT_MS);

describe('notification providers', () => {
  const notifyConsumer = () => queues.find((q) => q.name === 'notify')!.consumer;
  const notifySpec = () => functionSpecs().find((s) => s.entry === notifyConsumer())!;

  function providerView(t: Template, spec: FunctionSpec) {
    const json = t.toJSON() as { Resources: Record<string, Resource> };
    return withResources(json.Resources, () => {
      const id = functionOf(spec);
      const statements = statementsOf(id);
      const env = (json.Resources[id].Properties.Environment as { Variables: Record<string, unknown> })
        .Variables;
      return { statements, actions: allActions(statements), env };
    });
  }

  it('gives provider settings and permissions to the notification consumer only', {
    timeout: SYNTH_TIMEOUT_MS,
  }, () => {
    // Arrange
    const t = synth({
      notifyEnvironment: {
        EMAIL_PROVIDER: 'ses',
        EMAIL_FROM: 'alarm@example.com',
        VOICE_ORIGINATION_IDENTITY: '+8613800000000',
        WECHAT_CORP_ID: 'wx-corp',
      },
    });
    // Act
    const notify = providerView(t, notifySpec());
    const others = functionSpecs()
      .filter((s) => s.entry !== notifyConsumer())
      .map((s) => providerView(t, s));
    // Assert
    expect(notify.env).toMatchObject({ EMAIL_PROVIDER: 'ses', EMAIL_FROM: 'alarm@example.com' });
    for (const a of ['ses:SendEmail', 'sns:Publish', 'sms-voice:SendVoiceMessage'])
      expect(notify.actions).toContain(a);
    const sns = notify.statements.find((s) => s.Action === 'sns:Publish') as Statement & {
      NotResource?: unknown;
    };
    expect(sns.Resource).toBeUndefined();
    expect(JSON.stringify(sns.NotResource)).toContain(':sns:*:*:*');
    for (const other of others) {
      expect(other.env.WECHAT_CORP_ID).toBeUndefined();
      expect([...other.actions].filter((a) => /^(ses|sns|sms-voice):/.test(a))).toEqual([]);
    }
  });

  it('grants only what the configured providers need', { timeout: SYNTH_TIMEOUT_MS }, () => {
    // Act
    const defaults = providerView(template, notifySpec());
    const off = providerView(
      synth({
        notifyEnvironment: { SMS_PROVIDER: 'none', SMTP_HOST: 'smtp.example.com', EMAIL_FROM: 'a@b.c' },
      }),
      notifySpec(),
    );
    // Assert: SMS via SNS is on by default in AWS; SES and voice need explicit settings.
    expect(defaults.actions).toContain('sns:Publish');
    expect(defaults.actions).not.toContain('ses:SendEmail');
    expect(defaults.actions).not.toContain('sms-voice:SendVoiceMessage');
    expect([...off.actions].filter((a) => /^(ses|sns|sms-voice):/.test(a))).toEqual([]);
  });
});

describe('notification provider credentials', () => {
  const notifyConsumer = () => functionFor(queues.find((q) => q.name === 'notify')!.consumer);
  const notifySecretId = () => refOfOutput('NotifySecretArn');

  it('are a retained secret created without a value (CloudFormation never writes one)', () => {
    // Arrange
    const secret = resources[notifySecretId()];
    // Assert
    expect(secret).toMatchObject({
      Type: 'AWS::SecretsManager::Secret',
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
    });
    expect(secret.Properties.GenerateSecretString).toBeUndefined();
    expect(secret.Properties.SecretString).toBeUndefined();
    for (const k of NOTIFY_SECRET_VARIABLES) expect(String(secret.Properties.Description)).toContain(k);
    expect([...NOTIFY_SECRET_VARIABLES].sort()).toEqual([...NOTIFY_SECRET_NAMES].sort());
  });

  it('are readable by the notification consumer only, which alone gets NOTIFY_SECRETS_ARN', () => {
    for (const spec of functionSpecs()) {
      // Arrange
      const id = functionOf(spec);
      const isNotify = id === notifyConsumer();
      // Act
      const onSecret = actionsOn(statementsOf(id), notifySecretId());
      const env = (resources[id].Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      // Assert
      expect(onSecret.has('secretsmanager:GetSecretValue'), labelOf(spec)).toBe(isNotify);
      expect(env.NOTIFY_SECRETS_ARN, labelOf(spec)).toEqual(isNotify ? { Ref: notifySecretId() } : undefined);
      for (const k of NOTIFY_SECRET_VARIABLES) expect(env[k], `${labelOf(spec)} ${k}`).toBeUndefined();
    }
  });

  it.each(NOTIFY_SECRET_VARIABLES.map((k) => [k]))('refuses %s in the notification settings', (name) => {
    expect(() => synth({ notifyEnvironment: { EMAIL_FROM: 'a@b.c', [name]: 'hunter2' } })).toThrow(
      new RegExp(`${name} is a credential and must not be in -c notify.*NotifySecretArn`),
    );
  });
});
