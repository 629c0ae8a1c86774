import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * On Lambda (as the runtime sets the environment up, with active tracing), every AWS SDK client the
 * service creates and every outbound HTTP call sends its subsegment to the X-Ray daemon: here a UDP
 * socket on 127.0.0.1 stands for the daemon, and an HTTP server on 127.0.0.1 for AWS and the receivers
 * (it answers everything 400, which every client records like any answer).
 */
const daemon = createSocket('udp4');
const datagrams: string[] = [];
daemon.on('message', (m) => datagrams.push(m.toString('utf8')));
daemon.bind(0, '127.0.0.1');
await once(daemon, 'listening');

const paths: string[] = [];
const server = createServer((req, res) => {
  paths.push(req.url ?? '');
  req.resume();
  req.on('end', () => {
    res.writeHead(400, { 'content-type': 'application/x-amz-json-1.0' });
    res.end(JSON.stringify({ __type: 'ValidationException', message: 'fake' }));
  });
});
server.listen(0, '127.0.0.1');
await once(server, 'listening');
const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

Object.assign(process.env, {
  AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x',
  LAMBDA_TASK_ROOT: '/var/task',
  AWS_LAMBDA_FUNCTION_NAME: 'tocsin-test',
  _X_AMZN_TRACE_ID: 'Root=1-67891233-abcdef012345678912345678;Parent=53995c3f42cd8ad8;Sampled=1',
  AWS_XRAY_DAEMON_ADDRESS: `127.0.0.1:${daemon.address().port}`,
  AWS_REGION: 'eu-west-1',
  AWS_ACCESS_KEY_ID: 'test',
  AWS_SECRET_ACCESS_KEY: 'test',
  // Every client without an endpoint of its own (Secrets Manager) goes to the fake too.
  AWS_ENDPOINT_URL: endpoint,
  TABLE_NAME: 'tocsin-test',
  DYNAMODB_ENDPOINT: endpoint,
  SQS_ENDPOINT: endpoint,
  ALARM_QUEUE_URL: `${endpoint}/000000000000/tocsin-alarm`,
  SEAL_KEY_SECRET_ARN: 'arn:aws:secretsmanager:eu-west-1:000000000000:secret:seal',
  NOTIFY_SECRETS_ARN: 'arn:aws:secretsmanager:eu-west-1:000000000000:secret:notify',
  LOG_LEVEL: 'CRITICAL',
});
// What a local stack started in this process (the integration project's global setup) leaves behind.
delete process.env.TOCSIN_LOCAL;
delete process.env.SEAL_KEY;
delete process.env.POWERTOOLS_TRACE_ENABLED;
// Its service endpoints too (the fake Secrets Manager): every client here must reach the fake above.
for (const name of Object.keys(process.env))
  if (name.startsWith('AWS_ENDPOINT_URL_')) delete process.env[name];

const { tracingEnabled } = await import('./tracing.ts');
const { db } = await import('./db/client.ts');
const { sqs } = await import('./messaging/sqs.ts');
const { loadSealKey } = await import('./domain/auth/seal.ts');
const { loadNotifySecrets } = await import('./config/env.ts');
const { fetchSecret } = await import('./config/secrets.ts');
const { snsSms } = await import('./domain/notifications/providers/sms.ts');
const { pinpointVoice } = await import('./domain/notifications/providers/voice.ts');
const { sesMailer } = await import('./domain/notifications/providers/email.ts');
const { outboundRequest } = await import('./outbound/client.ts');

afterAll(() => {
  daemon.close();
  server.close();
});

interface Sent {
  name: string;
  namespace?: string;
  aws?: { operation?: string; table_name?: string; queue_url?: string };
  http?: { request?: { url?: string; method?: string }; response?: { status?: number } };
  error?: boolean;
  fault?: boolean;
  throttle?: boolean;
}

/** The subsegments the daemon received (each datagram: a JSON header line, then the document). */
function subsegments(): Sent[] {
  return datagrams.map((d) => JSON.parse(d.split('\n')[1]) as Sent);
}

async function received(count: number): Promise<Sent[]> {
  for (let i = 0; i < 200 && datagrams.length < count; i++) await new Promise((r) => setTimeout(r, 10));
  return subsegments();
}

describe('tracing on Lambda', () => {
  it('is on', () => {
    expect(tracingEnabled()).toBe(true);
  });

  it('records a subsegment for every AWS SDK client the service creates', async () => {
    datagrams.length = 0;
    await expect(
      db().send(new GetCommand({ TableName: 'tocsin-test', Key: { pk: 'a', sk: 'b' } })),
    ).rejects.toThrow();
    await expect(
      sqs().send(new SendMessageBatchCommand({ QueueUrl: process.env.ALARM_QUEUE_URL, Entries: [] })),
    ).rejects.toThrow();
    await expect(loadSealKey()).rejects.toThrow();
    await expect(loadNotifySecrets({ fetchSecret })).rejects.toThrow();
    const sms = await snsSms({ provider: 'sns', endpoint, countryCode: '+86' }, 'eu-west-1').send(
      '13800000000',
      'disk full',
    );
    const voice = await pinpointVoice(
      { provider: 'pinpoint', endpoint, originationIdentity: '+100', voiceId: 'ZHIYU', countryCode: '+86' },
      'eu-west-1',
    ).send('13800000000', 'disk full');
    const mail = await sesMailer({ provider: 'ses', from: 'a@example.com', endpoint }, 'eu-west-1').send(
      'b@example.com',
      { format: 1, title: 's', body: 't' },
    );
    expect([sms.outcome, voice.outcome, mail.outcome]).toEqual(['rejected', 'rejected', 'rejected']);

    const all = await received(7);
    const calls = all.map((s) => [s.name, s.aws?.operation]).sort();
    expect(calls).toEqual(
      [
        ['DynamoDB', 'GetItem'],
        ['SQS', 'SendMessageBatch'],
        ['SecretsManager', 'GetSecretValue'],
        ['SecretsManager', 'GetSecretValue'],
        ['SNS', 'Publish'],
        ['PinpointSMSVoiceV2', 'SendVoiceMessage'],
        ['SESv2', 'SendEmail'],
      ].sort(),
    );
    for (const s of all) expect(s).toMatchObject({ namespace: 'aws', http: { response: { status: 400 } } });
    expect(all.find((s) => s.name === 'DynamoDB')?.aws?.table_name).toBe('tocsin-test');
    // Nothing of what was sent: no phone number, no message text.
    expect(datagrams.join('\n')).not.toMatch(/13800000000|disk full/);
  });

  it('records outbound HTTP calls by host and status, never their path or query', async () => {
    datagrams.length = 0;
    const url = `${endpoint}/robot/send?access_token=SECRET-TOKEN-1`;
    const answer = await outboundRequest(url, { method: 'POST', body: '{}', timeoutMs: 2000, guard: false });
    expect(answer).toMatchObject({ ok: true, status: 400 });
    const refused = await outboundRequest('http://127.0.0.1:9/hook/SECRET-PATH-2', {
      method: 'GET',
      timeoutMs: 2000,
      guard: false,
    });
    expect(refused).toMatchObject({ ok: false, failure: 'network' });
    const all = await received(2);
    const host = new URL(endpoint).host;
    expect(all.map((s) => s.name).sort()).toEqual(['127.0.0.1:9', host].sort());
    const robot = all.find((s) => s.name === host);
    expect(robot).toMatchObject({
      namespace: 'remote',
      error: true,
      http: { request: { method: 'POST', url: endpoint }, response: { status: 400 } },
    });
    expect(all.find((s) => s.name === '127.0.0.1:9')).toMatchObject({ error: true });
    expect(paths).toContain('/robot/send?access_token=SECRET-TOKEN-1');
    expect(datagrams.join('\n')).not.toMatch(/SECRET|robot|hook/);
  });
});
