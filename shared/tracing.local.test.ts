import { randomBytes } from 'node:crypto';
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it } from 'vitest';

/**
 * In the local runtime (and the tests, and the benchmarks) tracing is off and costs nothing: the
 * tracer is never imported, no client gets its middleware, and nothing is sent anywhere, even with an
 * X-Ray daemon address configured.
 */
const daemon = createSocket('udp4');
const datagrams: Buffer[] = [];
daemon.on('message', (m) => datagrams.push(m));
daemon.bind(0, '127.0.0.1');
await once(daemon, 'listening');
const server = createServer((req, res) => {
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
  TOCSIN_LOCAL: '1',
  AWS_XRAY_DAEMON_ADDRESS: `127.0.0.1:${daemon.address().port}`,
  _X_AMZN_TRACE_ID: 'Root=1-67891233-abcdef012345678912345678;Parent=53995c3f42cd8ad8;Sampled=1',
  AWS_REGION: 'eu-west-1',
  AWS_ACCESS_KEY_ID: 'test',
  AWS_SECRET_ACCESS_KEY: 'test',
  TABLE_NAME: 'tocsin-test',
  DYNAMODB_ENDPOINT: endpoint,
  SQS_ENDPOINT: endpoint,
  SEAL_KEY: randomBytes(32).toString('base64'),
});
delete process.env.AWS_EXECUTION_ENV;
delete process.env.AWS_XRAY_CONTEXT_MISSING;

const { tracingEnabled, tracingWanted } = await import('./tracing.ts');
const { db } = await import('./db/client.ts');
const { sqs } = await import('./messaging/sqs.ts');
const { outboundRequest } = await import('./outbound/client.ts');

afterAll(() => {
  daemon.close();
  server.close();
});

describe('tracing off the Lambda runtime', () => {
  it('is decided by the environment: on Lambda only, unless turned off or run by the local runtime or SAM', () => {
    const lambda = { AWS_EXECUTION_ENV: 'AWS_Lambda_nodejs24.x' };
    expect(tracingWanted(lambda)).toBe(true);
    expect(tracingWanted({ ...lambda, POWERTOOLS_TRACE_ENABLED: 'true' })).toBe(true);
    expect(tracingWanted({ ...lambda, POWERTOOLS_TRACE_ENABLED: 'false' })).toBe(false);
    expect(tracingWanted({ ...lambda, TOCSIN_LOCAL: '1' })).toBe(false);
    expect(tracingWanted({ ...lambda, AWS_SAM_LOCAL: 'true' })).toBe(false);
    expect(tracingWanted({ AWS_EXECUTION_ENV: 'AWS_Lambda_amplify-mock' })).toBe(false);
    // The benchmarks' and the local stack's environment: a function name, no Lambda runtime.
    expect(tracingWanted({ AWS_LAMBDA_FUNCTION_NAME: 'tocsin-coldstart' })).toBe(false);
    expect(tracingWanted({})).toBe(false);
  });

  it('loads no tracer, wraps no client and sends nothing', async () => {
    expect(tracingEnabled()).toBe(false);
    // Importing Powertools Tracer sets this variable: it was never imported.
    expect(process.env.AWS_XRAY_CONTEXT_MISSING).toBeUndefined();
    const names = [...db().middlewareStack.identify(), ...sqs().middlewareStack.identify()];
    expect(names.some((n) => n.startsWith('XRaySDKInstrumentation'))).toBe(false);
    expect(names.length).toBeGreaterThan(10);
    await expect(
      db().send(new GetCommand({ TableName: 'tocsin-test', Key: { pk: 'a', sk: 'b' } })),
    ).rejects.toThrow();
    const answer = await outboundRequest(`${endpoint}/robot/send?access_token=x`, {
      method: 'POST',
      body: '{}',
      timeoutMs: 2000,
      guard: false,
    });
    expect(answer).toMatchObject({ ok: true, status: 400 });
    await new Promise((r) => setTimeout(r, 100));
    expect(datagrams).toEqual([]);
  });
});
