import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { BadRequestError, PayloadTooLargeError } from '../domain/errors.ts';
import { anyJsonBody, formOrQuery, jsonBody, queryInput } from './input.ts';

const event = (over: Partial<APIGatewayProxyEventV2>): APIGatewayProxyEventV2 =>
  ({
    headers: {},
    rawPath: '/',
    requestContext: { http: { method: 'GET' } },
    ...over,
  }) as APIGatewayProxyEventV2;

describe('the input sources', () => {
  it('reads the query string for GET', () => {
    expect(queryInput.read(event({ queryStringParameters: { id: '3' } }))).toEqual({ id: '3' });
  });

  it('parses JSON bodies and refuses other content types', () => {
    const json = event({ body: '{"a":1}', headers: { 'content-type': 'application/json; charset=utf-8' } });
    expect(jsonBody.read(json)).toEqual({ a: 1 });
    const text = event({ body: '{"a":1}', headers: { 'content-type': 'text/plain' } });
    expect(() => jsonBody.read(text)).toThrow(BadRequestError);
    expect(() =>
      jsonBody.read(event({ body: '[1]', headers: { 'content-type': 'application/json' } })),
    ).toThrow('request body must be a JSON object');
  });

  it('reads alarm bodies as JSON whatever the content type says', () => {
    const e = event({
      body: '{"taskid":"1"}',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(anyJsonBody.read(e)).toEqual({ taskid: '1' });
    expect(() => anyJsonBody.read(event({ body: 'taskid=1' }))).toThrow('request body is not valid JSON');
  });

  it('merges a form body over the query string (DELETE)', () => {
    const e = event({
      body: 'id=4&sign=abc',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      queryStringParameters: { id: '9', timestamp: '17' },
    });
    expect(formOrQuery.read(e)).toEqual({ id: '4', timestamp: '17', sign: 'abc' });
    expect(formOrQuery.read(event({ queryStringParameters: { id: '9' } }))).toEqual({ id: '9' });
  });

  it('decodes base64 bodies and refuses ones over 256 KiB', () => {
    const b64 = event({
      body: Buffer.from('{"a":2}').toString('base64'),
      isBase64Encoded: true,
      headers: { 'content-type': 'application/json' },
    });
    expect(jsonBody.read(b64)).toEqual({ a: 2 });
    const big = event({
      body: `{"a":"${'x'.repeat(256 * 1024)}"}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(() => jsonBody.read(big)).toThrow(PayloadTooLargeError);
  });
});
