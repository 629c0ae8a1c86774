import { afterEach, describe, expect, it } from 'vitest';
import { loadNotifyConfig } from '../../config/env.ts';

/** Provider settings (shared/config/env.ts loadNotifyConfig): defaults, switches and fail-fast errors. */
/** Every provider variable, so a test never depends on what the surrounding process has set. */
const PROVIDER_VAR = /^(ROBOT_|DING_|YACH_|WECHAT_|EMAIL_|SMTP_|SES_|SMS_|SNS_|VOICE_|PINPOINT_|NOTIFY_)/;
const saved = Object.fromEntries(Object.entries(process.env).filter(([k]) => PROVIDER_VAR.test(k)));

function clearProviderEnv() {
  for (const k of Object.keys(process.env)) if (PROVIDER_VAR.test(k)) delete process.env[k];
}

function withEnv(env: Record<string, string>) {
  clearProviderEnv();
  Object.assign(process.env, env);
}

afterEach(() => {
  clearProviderEnv();
  Object.assign(process.env, saved);
});

describe('loadNotifyConfig', () => {
  it('defaults: provider robot URLs, SNS in AWS, no e-mail, no voice without an origination identity', () => {
    withEnv({});
    const c = loadNotifyConfig(false);
    expect(c.robots).toEqual({
      dinggroup: 'https://oapi.dingtalk.com/robot/send',
      yachgroup: 'https://yach-oapi.zhiyinlou.com/robot/send',
    });
    expect(c.robotMaxPerMinute).toBe(20);
    expect(c.sms).toEqual({ provider: 'sns', endpoint: undefined, countryCode: '+86' });
    expect(c.email).toBeUndefined();
    expect(c.phone).toBeUndefined();
    expect(c.dingworker).toBeUndefined();
  });

  it('leaves SMS and voice off in the local runtime unless asked for', () => {
    withEnv({});
    expect(loadNotifyConfig(true).sms).toBeUndefined();
    withEnv({ SMS_PROVIDER: 'sns', VOICE_PROVIDER: 'pinpoint', VOICE_ORIGINATION_IDENTITY: '+12065550100' });
    const c = loadNotifyConfig(true);
    expect(c.sms?.provider).toBe('sns');
    expect(c.phone).toMatchObject({ originationIdentity: '+12065550100', voiceId: 'ZHIYU' });
  });

  it('switches a robot provider off with none and configures SMTP and work notices', () => {
    withEnv({
      ROBOT_YACH_BASE_URL: 'none',
      SMTP_HOST: 'mail.local',
      SMTP_SECURE: 'true',
      EMAIL_FROM: 'a@b.c',
      DING_WORK_APPKEY: 'k',
      DING_WORK_APPSECRET: 's',
      DING_WORK_AGENT_ID: '1',
    });
    const c = loadNotifyConfig(false);
    expect(c.robots.yachgroup).toBeUndefined();
    expect(c.email).toMatchObject({
      provider: 'smtp',
      host: 'mail.local',
      port: 465,
      secure: true,
      from: 'a@b.c',
    });
    expect(c.dingworker).toMatchObject({ baseUrl: 'https://oapi.dingtalk.com', agentId: '1' });
  });

  it.each([
    [{ EMAIL_PROVIDER: 'pigeon' }, 'EMAIL_PROVIDER'],
    [{ SMTP_HOST: 'mail.local' }, 'EMAIL_FROM'],
    [{ EMAIL_PROVIDER: 'smtp', EMAIL_FROM: 'a@b.c' }, 'SMTP_HOST'],
    [{ ROBOT_DING_BASE_URL: 'ftp://x' }, 'ROBOT_DING_BASE_URL'],
    [{ SMS_COUNTRY_CODE: '86' }, 'SMS_COUNTRY_CODE'],
    [{ SMS_PROVIDER: 'twilio' }, 'SMS_PROVIDER'],
  ])('refuses %j naming %s', (env, name) => {
    withEnv(env);
    expect(() => loadNotifyConfig(false)).toThrow(name);
  });
});
