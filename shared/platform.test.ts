import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { describe, expect, it } from 'vitest';
import { perContainer } from './container.ts';
import { platform, sdkClient } from './platform.ts';

/** The platform port's AWS adapter: what a function in Lambda runs on (no adapter installed). */
describe('the AWS adapter', () => {
  it('is the platform when none is installed', () => {
    expect(platform().clientSettings('dynamodb', undefined)).toEqual({});
  });

  it('gives a client a configured endpoint and nothing else (the SDK signs as usual)', () => {
    expect(platform().clientSettings('sqs', 'http://127.0.0.1:9')).toEqual({ endpoint: 'http://127.0.0.1:9' });
  });

  it("makes a client with the platform's settings, without the SDK's logger middleware", () => {
    const seen: object[] = [];
    const client = sdkClient(
      'dynamodb',
      (s) => {
        seen.push(s);
        return new DynamoDBClient({ region: 'us-east-1', ...s });
      },
      'http://127.0.0.1:9',
    );
    expect(seen).toEqual([{ endpoint: 'http://127.0.0.1:9' }]);
    expect(client.middlewareStack.identify().some((m) => m.startsWith('loggerMiddleware'))).toBe(false);
    client.destroy();
  });

  it('keeps one state per container: the module', () => {
    const state = perContainer(() => ({ n: 0 }));
    state().n++;
    state().n++;
    expect(state().n).toBe(2);
    expect(perContainer(() => ({ n: 0 }))().n).toBe(0);
  });
});
