import type { APIGatewayProxyEventV2 } from 'aws-lambda';
import { describe, expect, it } from 'vitest';
import { BadRequestError, PayloadTooLargeError } from '../domain/errors.ts';
import { readInput } from './handler.ts';

const event = (over: Partial<APIGatewayProxyEventV2>): APIGatewayProxyEventV2 =>
  ({
    headers: {},
    rawPath: '/',
    requestContext: { http: { method: 'GET' } },
    ...over,
  }) as APIGatewayProxyEventV2;

describe('readInput', () => {
  it('reads the query string for GET', () => {
    expect(readInput(event({ queryStringParameters: { id: '3' } }), 'query')).toEqual({ id: '3' });
  });

  it('parses JSON bodies and refuses other content types', () => {
    const json = event({ body: '{"a":1}', headers: { 'content-type': 'application/json; charset=utf-8' } });
    expect(readInput(json, 'json')).toEqual({ a: 1 });
    const text = event({ body: '{"a":1}', headers: { 'content-type': 'text/plain' } });
    expect(() => readInput(text, 'json')).toThrow(BadRequestError);
    expect(() =>
      readInput(event({ body: '[1]', headers: { 'content-type': 'application/json' } }), 'json'),
    ).toThrow('request body must be a JSON object');
  });

  it('reads alarm bodies as JSON whatever the content type says', () => {
    const e = event({
      body: '{"taskid":"1"}',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(readInput(e, 'any-json')).toEqual({ taskid: '1' });
    expect(() => readInput(event({ body: 'taskid=1' }), 'any-json')).toThrow(
      'request body is not valid JSON',
    );
  });

  it('merges a form body over the query string (DELETE)', () => {
    const e = event({
      body: 'id=4&sign=abc',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      queryStringParameters: { id: '9', timestamp: '17' },
    });
    expect(readInput(e, 'form-or-query')).toEqual({ id: '4', timestamp: '17', sign: 'abc' });
    expect(readInput(event({ queryStringParameters: { id: '9' } }), 'form-or-query')).toEqual({ id: '9' });
  });

  it('decodes base64 bodies and refuses ones over 256 KiB', () => {
    const b64 = event({
      body: Buffer.from('{"a":2}').toString('base64'),
      isBase64Encoded: true,
      headers: { 'content-type': 'application/json' },
    });
    expect(readInput(b64, 'json')).toEqual({ a: 2 });
    const big = event({
      body: `{"a":"${'x'.repeat(256 * 1024)}"}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(() => readInput(big, 'json')).toThrow(PayloadTooLargeError);
  });
});
