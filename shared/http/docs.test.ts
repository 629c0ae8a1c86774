import type { APIGatewayProxyEventV2, Context } from 'aws-lambda';
import { afterEach, describe, expect, it } from 'vitest';
import { handler as getHealth } from '../../functions/http/health/get-health.ts';
import { documentResponse, REFERENCE_CSP, referenceResponse, serverUrl } from './docs.ts';
import { httpHandler, TASK_AUTH_SCHEMA } from './handler.ts';
import { logged } from '../testing/logs.ts';

const event = (over: { domainName?: string; apiId?: string; rawPath?: string }): APIGatewayProxyEventV2 =>
  ({
    headers: {},
    rawPath: over.rawPath ?? '/openapi.json',
    requestContext: {
      domainName: over.domainName,
      apiId: over.apiId ?? 'abc123',
      http: { method: 'GET' },
    },
  }) as unknown as APIGatewayProxyEventV2;

const context = { awsRequestId: 'req-1' } as Context;
const DOC = {
  openapi: '3.1.0',
  info: { title: 'tocsin', version: '1' },
  servers: [{ url: '/' }],
  paths: { '/health': { get: { summary: 'Liveness', responses: { '200': { description: 'ok' } } } } },
};

afterEach(() => {
  delete process.env.BASE_PATH;
});

describe('serverUrl', () => {
  it("is the API's domain over HTTPS, with a custom domain's mapping path", () => {
    // Act / Assert
    expect(serverUrl(event({ domainName: 'abc.execute-api.eu-west-1.amazonaws.com' }), '/openapi.json')).toBe(
      'https://abc.execute-api.eu-west-1.amazonaws.com',
    );
    expect(
      serverUrl(event({ domainName: 'api.example.com', rawPath: '/tocsin/openapi.json' }), '/openapi.json'),
    ).toBe('https://api.example.com/tocsin');
  });

  it('is the local host over HTTP with BASE_PATH on the local runtime', () => {
    // Arrange
    process.env.BASE_PATH = '/api/';
    // Act / Assert
    expect(serverUrl(event({ domainName: '127.0.0.1:3000', apiId: 'local' }), '/openapi.json')).toBe(
      'http://127.0.0.1:3000/api',
    );
  });

  it('is unknown when the host or path is anything but a plain name (the document stays relative)', () => {
    // Act / Assert
    expect(serverUrl(event({}), '/openapi.json')).toBeUndefined();
    expect(serverUrl(event({ domainName: 'evil.com/"><script>' }), '/openapi.json')).toBeUndefined();
    expect(
      serverUrl(event({ domainName: 'a.com', rawPath: '/x y/openapi.json' }), '/openapi.json'),
    ).toBeUndefined();
  });
});

describe('the documents served', () => {
  it('GET /openapi.json: the document with this server, JSON, readable from any origin', () => {
    // Act
    const res = documentResponse(DOC, event({ domainName: 'api.example.com' }), '/openapi.json');
    const relative = documentResponse(DOC, event({}), '/openapi.json');
    // Assert
    expect(res.statusCode).toBe(200);
    expect(res.headers).toMatchObject({
      'content-type': 'application/json; charset=utf-8',
      'access-control-allow-origin': '*',
      'x-content-type-options': 'nosniff',
    });
    expect(JSON.parse(String(res.body)).servers).toEqual([
      { url: 'https://api.example.com', description: 'This deployment.' },
    ]);
    expect(JSON.parse(String(relative.body)).servers).toEqual([{ url: '/' }]);
    expect(DOC.servers).toEqual([{ url: '/' }]);
  });

  it('GET /docs: HTML under a policy that runs no script and loads nothing', () => {
    // Act
    const res = referenceResponse(DOC, event({ domainName: 'api.example.com', rawPath: '/docs' }), '/docs');
    // Assert
    expect(res.headers).toMatchObject({
      'content-type': 'text/html; charset=utf-8',
      'content-security-policy': REFERENCE_CSP,
    });
    expect(REFERENCE_CSP).toContain("default-src 'none'");
    expect(REFERENCE_CSP).not.toContain('script-src');
    expect(String(res.body)).toContain('curl -X GET &#39;https://api.example.com/health&#39;');
  });
});

describe('httpHandler spec and raw responses', () => {
  it('exposes what a handler declares, read-only', () => {
    // Arrange
    const schema = { type: 'object', properties: { n: { type: 'integer' } } };
    const h = httpHandler(
      { auth: 'app+task', input: 'json', schema, refusalsAsHttp200: true },
      async () => ({}),
    );
    // Act / Assert
    expect(h.spec).toEqual({
      auth: 'app+task',
      input: 'json',
      schema,
      refusalsAsHttp200: true,
      rawResponse: false,
    });
    expect(Object.isFrozen(h.spec)).toBe(true);
    expect(() => {
      (h as { spec: unknown }).spec = {};
    }).toThrow(TypeError);
    expect(getHealth.spec).toMatchObject({ auth: 'none', input: 'none', successMessage: 'ok' });
    expect(TASK_AUTH_SCHEMA.required).toEqual(['id', 'timestamp', 'sign']);
  });

  it('passes a raw result through and keeps the envelope for errors and other handlers', async () => {
    // Arrange
    const raw = httpHandler({ auth: 'none', input: 'none', rawResponse: true }, async () => ({
      statusCode: 200,
      headers: { 'content-type': 'text/plain' },
      body: 'hello',
    }));
    const failing = httpHandler({ auth: 'none', input: 'none', rawResponse: true }, async () => {
      throw new Error('boom');
    });
    const enveloped = httpHandler({ auth: 'none', input: 'none' }, async () => ({ a: 1 }));
    // Act
    const local = event({ apiId: 'local' });
    const [[r1, r2, r3], errors] = await logged('error', () =>
      Promise.all([raw(local, context), failing(local, context), enveloped(local, context)]),
    );
    // The failure is logged (with the request id), never answered with its message
    expect(errors.map(([m, x]) => [m, (x.error as Error).message])).toEqual([['unhandled error', 'boom']]);
    // Assert
    expect(r1).toEqual({
      statusCode: 200,
      headers: {
        'content-type': 'text/plain',
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
      },
      body: 'hello',
    });
    expect(r2.statusCode).toBe(500);
    expect(JSON.parse(String(r2.body))).toEqual({ code: 500, msg: 'internal error', data: {} });
    expect(JSON.parse(String(r3.body))).toEqual({ code: 0, msg: 'success', data: { a: 1 } });
    for (const r of [r2, r3]) {
      expect(r.headers).toMatchObject({ 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
      expect(r.headers).not.toHaveProperty('strict-transport-security');
    }
  });

  it('adds HSTS on AWS (HTTPS) and keeps a cache-control a route sets itself', async () => {
    // Arrange
    const cached = httpHandler({ auth: 'none', input: 'none', rawResponse: true }, async () => ({
      statusCode: 200,
      headers: { 'Cache-Control': 'public, max-age=300' },
      body: '{}',
    }));
    // Act
    const r = await cached(event({}), context);
    // Assert
    expect(r.headers).toEqual({
      'Cache-Control': 'public, max-age=300',
      'x-content-type-options': 'nosniff',
      'strict-transport-security': 'max-age=31536000; includeSubDomains',
    });
  });
});
