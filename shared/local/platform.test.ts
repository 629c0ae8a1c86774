import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { perContainer } from '../container.ts';
import { platform, sdkClient, usePlatform } from '../platform.ts';
import { asFunction, CALL_LOG_VARIABLE } from './call-record.ts';
import { localPlatform, useLocalPlatform } from './platform.ts';

/** The platform port's local adapter, as each thread of the local runtime installs it. */
const saved = { ...process.env };
afterEach(() => {
  process.env = { ...saved };
  usePlatform(undefined);
});

/** A client of the local adapter whose requests never leave the process: what each carried is kept. */
function offlineClient(sent: { authorization?: string; url: string }[]) {
  const client = sdkClient(
    'dynamodb',
    (s) => new DynamoDBClient({ region: 'us-east-1', maxAttempts: 1, ...s }),
    'http://127.0.0.1:9',
  );
  client.middlewareStack.add(
    () => async (args: { request: unknown }) => {
      const r = args.request as { headers: Record<string, string>; hostname: string; port: number };
      sent.push({ authorization: r.headers.authorization, url: `${r.hostname}:${r.port}` });
      return { response: { statusCode: 200, headers: {}, body: Buffer.from('{}') }, output: {} as never };
    },
    { step: 'deserialize', priority: 'low', name: 'offline' },
  );
  return client;
}

describe('the local adapter', () => {
  it('is the platform once installed', () => {
    useLocalPlatform();
    expect(platform()).toBe(localPlatform);
  });

  it('sends the emulators a fixed Authorization header instead of a signature', async () => {
    useLocalPlatform();
    const sent: { authorization?: string; url: string }[] = [];
    const client = offlineClient(sent);
    await client.send(new GetItemCommand({ TableName: 't', Key: { pk: { S: 'a' } } })).catch(() => undefined);
    expect(sent).toEqual([
      {
        url: '127.0.0.1:9',
        authorization:
          'AWS4-HMAC-SHA256 Credential=local/20000101/local/local/aws4_request, SignedHeaders=host, Signature=0',
      },
    ]);
  });

  it("records a client's calls made as a function while TOCSIN_CALL_LOG is set", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'calls-'));
    try {
      Object.assign(process.env, { [CALL_LOG_VARIABLE]: join(dir, 'calls.jsonl'), TABLE_NAME: 't' });
      useLocalPlatform();
      const client = offlineClient([]);
      await asFunction('GET /x', () =>
        client
          .send(new GetItemCommand({ TableName: 't', Key: { pk: { S: 'TASK#1' } } }))
          .catch(() => undefined),
      );
      const lines = readFileSync(join(dir, 'calls.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(lines).toEqual([
        { fn: 'GET /x', op: 'GetItem', action: 'dynamodb:GetItem', resource: 'table', keys: ['TASK#'] },
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps one state outside functions and, while recording, one per function', () => {
    process.env[CALL_LOG_VARIABLE] = join(tmpdir(), 'unused-calls.jsonl');
    useLocalPlatform();
    const state = perContainer(() => ({ n: 0 }));
    state().n++;
    asFunction('GET /a', () => {
      state().n += 10;
    });
    asFunction('GET /a', () => {
      state().n += 10;
    });
    asFunction('GET /b', () => {
      state().n += 100;
    });
    expect(state().n).toBe(1);
    expect(asFunction('GET /a', () => state().n)).toBe(20);
    expect(asFunction('GET /b', () => state().n)).toBe(100);
  });

  it('keeps one state while calls are not recorded, as on AWS', () => {
    delete process.env[CALL_LOG_VARIABLE];
    useLocalPlatform();
    const state = perContainer(() => ({ n: 0 }));
    asFunction('GET /a', () => {
      state().n += 10;
    });
    expect(asFunction('GET /b', () => state().n)).toBe(10);
  });
});
