import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FAKE_CREDENTIALS, FakeClient, type Fakes, startFakes } from '../../../../test/support/fakes.ts';
import { retryDelaySeconds } from '../../../messaging/retry.ts';
import { parseJob } from '../delivery.ts';
import type { RenderedMessage } from '../render.ts';
import { awsErrorOutcome } from './aws.ts';
import { mailContent, sesMailer, sesRequest, smtpErrorOutcome } from './email.ts';
import { classifyRobotReply, robotBody, robotSign, robotUrl } from './robot.ts';
import { e164, SMS_MAX_CHARS, smsRequest, snsSms } from './sms.ts';
import { maskEmail, maskPhone, sanitizeDetail } from './types.ts';
import { pinpointVoice, VOICE_MAX_CHARS, voiceRequest } from './voice.ts';
import { clearTokenCache, dingWorker, wechatWorker, yachWorker } from './work-notice.ts';

const md: RenderedMessage = { format: 2, title: 'T', body: '### T\n- **a**: b' };
const text: RenderedMessage = { format: 1, title: 'T', body: 'hello' };
const html: RenderedMessage = { format: 3, title: 'Subject\nline', body: '<p>a &amp; b</p>' };

describe('robot protocol', () => {
  it('signs base64(hmac_sha256(secret, timestamp + "\\n" + secret)) and url-encodes it', () => {
    const sign = robotSign('SECabc', 1700000000000);
    expect(sign).toBe(createHmac('sha256', 'SECabc').update('1700000000000\nSECabc').digest('base64'));
    const url = robotUrl(
      'https://oapi.dingtalk.com/robot/send',
      { webhook: 'tok', secret: 'SECabc' },
      1700000000000,
    );
    expect(url.origin + url.pathname).toBe('https://oapi.dingtalk.com/robot/send');
    expect(url.searchParams.get('access_token')).toBe('tok');
    expect(url.searchParams.get('timestamp')).toBe('1700000000000');
    expect(url.searchParams.get('sign')).toBe(sign);
    expect(url.search).toContain(`sign=${encodeURIComponent(sign)}`);
  });

  it('calls a full robot URL as given and signs only robots with a secret', () => {
    const url = robotUrl(
      'https://base/robot/send',
      { webhook: 'https://x.example/robot/send?access_token=abc' },
      1,
    );
    expect(url.toString()).toBe('https://x.example/robot/send?access_token=abc');
  });

  it('builds text, markdown and actionCard bodies', () => {
    expect(robotBody(text)).toEqual({ msgtype: 'text', text: { content: 'hello' } });
    expect(robotBody(md)).toEqual({ msgtype: 'markdown', markdown: { title: 'T', text: md.body } });
    expect(robotBody(html)).toEqual({ msgtype: 'text', text: { content: 'a & b' } });
    expect(robotBody({ ...md, format: 4 })).toMatchObject({ msgtype: 'markdown' });
    expect(robotBody({ ...md, format: 4 }, 'https://console')).toEqual({
      msgtype: 'actionCard',
      actionCard: {
        title: 'T',
        text: md.body,
        btnOrientation: '0',
        singleTitle: 'View',
        singleURL: 'https://console',
      },
    });
  });

  it.each([
    [200, { errcode: 0, errmsg: 'ok' }, 'delivered', '0'],
    [200, { code: 200, msg: 'ok' }, 'delivered', '200'],
    [200, { errcode: 130101, errmsg: 'send too fast' }, 'rate_limited', '130101'],
    [200, { errcode: 410100, errmsg: 'send too fast' }, 'rate_limited', '410100'],
    [200, { errcode: -1, errmsg: 'system busy' }, 'failed', '-1'],
    [200, { errcode: 310000, errmsg: 'sign not match' }, 'rejected', '310000'],
    [200, { errcode: 300001, errmsg: 'token is not exist' }, 'rejected', '300001'],
    [200, undefined, 'failed', 'bad_reply'],
    [502, undefined, 'failed', 'http_502'],
    [429, undefined, 'failed', 'http_429'],
    [404, undefined, 'rejected', 'http_404'],
  ])('classifies HTTP %i %j as %s', (status, json, outcome, code) => {
    expect(classifyRobotReply(status, json, 'x')).toMatchObject({ outcome, code });
  });
});

describe('text helpers', () => {
  it('writes mainland numbers in E.164 with the country code and keeps international ones', () => {
    expect(e164('13800000000', '+86')).toBe('+8613800000000');
    expect(e164('138 0000-0000', '+86')).toBe('+8613800000000');
    expect(e164('+85212345678', '+86')).toBe('+85212345678');
    expect(e164('0085212345678', '+86')).toBe('+85212345678');
  });

  it('masks e-mail addresses and phone numbers and keeps provider details short', () => {
    expect(maskEmail('annlee@example.com')).toBe('an***@example.com');
    expect(maskPhone('13800000000')).toBe('138****0000');
    expect(sanitizeDetail('invalid number +8613800000000')).toBe('invalid number +86****');
    expect(sanitizeDetail('x'.repeat(500))?.length).toBeLessThanOrEqual(200);
  });

  it('puts the title in the subject (one line) and HTML with a text alternative', () => {
    expect(mailContent(html)).toEqual({ subject: 'Subject line', text: 'a & b', html: '<p>a &amp; b</p>' });
    expect(mailContent(text)).toEqual({ subject: 'T', text: 'hello' });
  });

  it('computes the retry delay from the backoff and lets the last failure through to the DLQ', () => {
    expect(retryDelaySeconds(1, [5, 30, 120])).toBe(5);
    expect(retryDelaySeconds(3, [5, 30, 120])).toBe(120);
    expect(retryDelaySeconds(4, [5, 30, 120])).toBe(0);
  });

  it('accepts only well-formed notification jobs', () => {
    const ok = {
      kind: 'notify',
      job_id: 'a:b',
      task_id: 1,
      scene: 'claim',
      channel: 'sms',
      users: [1],
      context: { task: { id: 1, name: 'n' } },
    };
    expect(parseJob(JSON.stringify(ok))).toEqual(ok);
    expect(parseJob('{')).toBeUndefined();
    expect(parseJob(JSON.stringify({ ...ok, channel: 'webhook' }))).toBeUndefined();
    expect(parseJob(JSON.stringify({ ...ok, scene: 'nope' }))).toBeUndefined();
    expect(parseJob(JSON.stringify({ ...ok, users: ['1'] }))).toBeUndefined();
    expect(parseJob(JSON.stringify({ ...ok, robots: [{ secret: 'x' }] }))).toBeUndefined();
  });
});

describe('error classification', () => {
  it.each([
    [{ responseCode: 550, response: '550 no such user' }, 'rejected', 'smtp_550'],
    [{ responseCode: 451, response: '451 try later' }, 'failed', 'smtp_451'],
    [{ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED' }, 'failed', 'ECONNREFUSED'],
  ])('SMTP %j is %s', (err, outcome, code) => {
    expect(smtpErrorOutcome(err)).toMatchObject({ outcome, code });
  });

  it.each([
    [{ name: 'ThrottlingException', $metadata: { httpStatusCode: 400 } }, 'failed'],
    [{ name: 'InvalidParameterException', $fault: 'client', $metadata: { httpStatusCode: 400 } }, 'rejected'],
    [{ name: 'MessageRejected', $fault: 'client', $metadata: { httpStatusCode: 400 } }, 'rejected'],
    [{ name: 'InternalServerError', $fault: 'server', $metadata: { httpStatusCode: 500 } }, 'failed'],
    [{ name: 'TimeoutError', $metadata: {} }, 'failed'],
  ])('AWS %j is %s', (err, outcome) => {
    expect(awsErrorOutcome(err).outcome).toBe(outcome);
  });
});

describe('AWS request construction', () => {
  it('publishes SMS to SNS in E.164, cut to 300 characters', () => {
    const cmd = smsRequest('13800000000', 'y'.repeat(400), '+86');
    expect(cmd.input.PhoneNumber).toBe('+8613800000000');
    expect([...(cmd.input.Message ?? '')].length).toBe(SMS_MAX_CHARS);
  });

  it('places a voice call through Pinpoint SMS Voice v2, cut to 280 characters', () => {
    const cfg = {
      provider: 'pinpoint' as const,
      originationIdentity: '+12065550100',
      voiceId: 'ZHIYU',
      countryCode: '+86',
    };
    const cmd = voiceRequest(cfg, '13900000000', 'z'.repeat(400));
    expect(cmd.input).toMatchObject({
      DestinationPhoneNumber: '+8613900000000',
      OriginationIdentity: '+12065550100',
      MessageBodyTextType: 'TEXT',
      VoiceId: 'ZHIYU',
    });
    expect([...(cmd.input.MessageBody ?? '')].length).toBe(VOICE_MAX_CHARS);
  });

  it('sends e-mail through SES v2 with text and HTML bodies', () => {
    const cmd = sesRequest('from@example.com', 'to@example.com', mailContent(html));
    expect(cmd.input.Destination?.ToAddresses).toEqual(['to@example.com']);
    expect(cmd.input.Content?.Simple?.Subject?.Data).toBe('Subject line');
    expect(cmd.input.Content?.Simple?.Body?.Html?.Data).toBe('<p>a &amp; b</p>');
    expect(cmd.input.Content?.Simple?.Body?.Text?.Data).toBe('a & b');
  });
});

describe('providers on the wire (against the local fakes)', () => {
  let f: Fakes;
  let client: FakeClient;
  const nowMs = () => Date.now();

  beforeAll(async () => {
    f = await startFakes();
    client = new FakeClient(f.url);
    clearTokenCache();
  });
  afterAll(async () => {
    await f.stop();
  });

  it('DingTalk work notice: one gettoken for several sends, a new token when the provider refuses it', async () => {
    const c = FAKE_CREDENTIALS.ding;
    const ding = dingWorker({ baseUrl: `${f.url}/dingapi`, ...c }, { timeoutMs: 2000, nowMs });

    expect(await ding.send(['annlee'], md, 'j1')).toMatchObject({ outcome: 'delivered', code: '0' });
    expect(await ding.send(['zhangsan'], text, 'j2')).toMatchObject({ outcome: 'delivered' });
    expect(await client.requests('gettoken')).toHaveLength(1);

    await client.script('dingworker', [{ body: { errcode: 40014, errmsg: 'invalid access_token' } }]);
    expect(await ding.send(['bobstone'], md, 'j3')).toMatchObject({ outcome: 'delivered' });
    expect(await client.requests('gettoken')).toHaveLength(2);
    const sends = await client.requests('dingworker');
    expect(sends.map((s) => s.json.userid_list)).toEqual(['annlee', 'zhangsan', 'bobstone', 'bobstone']);
    expect(sends[1].json.msg).toEqual({ msgtype: 'text', text: { content: 'hello' } });
  });

  it('work notices: wrong credentials are retried (deployment problem), provider refusals are final', async () => {
    const wx = wechatWorker(
      { baseUrl: `${f.url}/wechat/cgi-bin`, corpId: 'wrong', corpSecret: 'wrong', agentId: '1' },
      { timeoutMs: 2000, nowMs },
    );
    expect(await wx.send(['zs'], text, 'j')).toMatchObject({ outcome: 'failed', code: 'gettoken_40089' });

    const yach = yachWorker(
      { baseUrl: `${f.url}/yachapi`, ...FAKE_CREDENTIALS.yach },
      { timeoutMs: 2000, nowMs },
    );
    await client.script('yachworker', [{ body: { code: 40035, msg: 'invalid work code' } }]);
    expect(await yach.send(['nobody'], text, 'j')).toMatchObject({ outcome: 'rejected', code: '40035' });
    expect(await yach.send(['zhangsan'], md, 'j')).toMatchObject({ outcome: 'delivered', code: '200' });
  });

  it('an unreachable provider is a retryable failure', async () => {
    const ding = dingWorker(
      { baseUrl: 'http://127.0.0.1:9', ...FAKE_CREDENTIALS.ding },
      { timeoutMs: 500, nowMs },
    );
    expect((await ding.send(['x'], text, 'j')).outcome).toBe('failed');
  });

  it('Pinpoint SMS Voice v2 (JSON 1.0 protocol)', async () => {
    const voice = pinpointVoice(
      {
        provider: 'pinpoint',
        endpoint: `${f.url}/pinpoint/`,
        originationIdentity: '+12065550100',
        voiceId: 'ZHIYU',
        countryCode: '+86',
      },
      'us-east-1',
    );
    expect(await voice.send('13800000000', 'alarm')).toMatchObject({ outcome: 'delivered' });
    const [req] = await client.requests('pinpoint');
    expect(req.headers['x-amz-target']).toBe('PinpointSMSVoiceV2.SendVoiceMessage');
    expect(req.json).toMatchObject({ DestinationPhoneNumber: '+8613800000000', MessageBody: 'alarm' });
  });

  it('SES v2 (REST JSON)', async () => {
    const ses = sesMailer(
      { provider: 'ses', from: 'from@example.com', endpoint: `${f.url}/ses` },
      'us-east-1',
    );
    expect(await ses.send('to@example.com', html)).toMatchObject({ outcome: 'delivered' });
    const [req] = await client.requests('ses');
    expect(req.json.Destination.ToAddresses).toEqual(['to@example.com']);
    expect(req.json.Content.Simple.Subject.Data).toBe('Subject line');
  });

  it('SNS (query protocol): delivered, refused and throttled answers', async () => {
    const sms = snsSms({ provider: 'sns', endpoint: `${f.url}/sns/`, countryCode: '+86' }, 'us-east-1');
    expect(await sms.send('13800000000', 'hi')).toMatchObject({ outcome: 'delivered' });
    const err = (code: string, type: string) =>
      `<ErrorResponse><Error><Type>${type}</Type><Code>${code}</Code><Message>${code} happened</Message></Error><RequestId>r</RequestId></ErrorResponse>`;
    await client.script('sns', [{ status: 400, body: err('InvalidParameter', 'Sender') }]);
    expect(await sms.send('13800000000', 'hi')).toMatchObject({
      outcome: 'rejected',
      code: 'InvalidParameterException',
    });
    await client.script('sns', [{ status: 400, body: err('Throttling', 'Sender') }]);
    expect((await sms.send('13800000000', 'hi')).outcome).toBe('failed');
  });
});
