import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { ListQueuesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { type inThreadWhenServed, localEmulatorOptions, serveInThread } from '../aws.ts';
import { advanceClock, clockOffsetSeconds, nowMs, shareClock } from '../clock.ts';
import { BUNDLE_DIR_VARIABLE, handlerModule, lambdaContext, loadHandler } from './lambda.ts';
import { projectRoot } from './paths.ts';

const dir = mkdtempSync(join(tmpdir(), 'tocsin-bundle-mode-'));
afterAll(() => {
  delete process.env[BUNDLE_DIR_VARIABLE];
  rmSync(dir, { recursive: true, force: true });
});

/** A module bundled the way the functions are: its own copy of everything it imports. */
async function bundled(source: string, name: string): Promise<string> {
  const entry = join(dir, `${name}.ts`);
  writeFileSync(entry, source);
  const outfile = join(dir, name, 'index.mjs');
  await build({
    entryPoints: [entry],
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    logLevel: 'error',
  });
  return outfile;
}

describe('bundle mode of the local runtime', () => {
  it('imports a deployed entry from its bundle, anything else from its source', async () => {
    mkdirSync(join(dir, 'functions/http/fake'), { recursive: true });
    writeFileSync(
      join(dir, 'functions/http/fake/index.mjs'),
      'export const handler = async (event) => ({ from: "bundle", event });\n',
    );
    writeFileSync(
      join(dir, 'bundles.json'),
      JSON.stringify({ 'functions/http/fake.ts': 'functions/http/fake/index.mjs' }),
    );
    process.env[BUNDLE_DIR_VARIABLE] = dir;
    expect(handlerModule('functions/http/fake.ts')).toBe(join(dir, 'functions/http/fake/index.mjs'));
    expect(handlerModule('shared/local/clock-routes.ts')).toBe(
      join(projectRoot, 'shared/local/clock-routes.ts'),
    );
    const handler = await loadHandler('functions/http/fake.ts');
    expect(await handler({ n: 1 }, lambdaContext('fake'))).toEqual({ from: 'bundle', event: { n: 1 } });
    delete process.env[BUNDLE_DIR_VARIABLE];
    expect(handlerModule('functions/http/fake.ts')).toBe(join(projectRoot, 'functions/http/fake.ts'));
  });

  it('shares the test clock and the in-thread SQS emulator with every bundle', async () => {
    const file = await bundled(
      `export { nowMs, clockOffsetSeconds } from ${JSON.stringify(join(projectRoot, 'shared/clock.ts'))};
       export { inThreadWhenServed, serveInThread } from ${JSON.stringify(join(projectRoot, 'shared/aws.ts'))};`,
      'copies',
    );
    const copy = (await import(pathToFileURL(file).href)) as {
      nowMs: () => number;
      clockOffsetSeconds: () => number;
      inThreadWhenServed: typeof inThreadWhenServed;
    };
    const before = clockOffsetSeconds();
    advanceClock(3600);
    expect(copy.clockOffsetSeconds()).toBe(before + 3600);
    shareClock(new SharedArrayBuffer(8));
    advanceClock(60);
    expect(copy.clockOffsetSeconds()).toBe(before + 3660);
    expect(Math.abs(copy.nowMs() - nowMs())).toBeLessThan(1000);

    // An emulator this thread serves (registered by the stack's own copy) answers a bundle's client.
    const endpoint = 'http://127.0.0.1:9';
    const served: string[] = [];
    serveInThread(endpoint, async (request) => {
      served.push(String(request.headers['x-amz-target']));
      throw new Error('served in thread');
    });
    const client = new SQSClient({ region: 'us-east-1', maxAttempts: 1, ...localEmulatorOptions(endpoint) });
    copy.inThreadWhenServed(client, endpoint);
    await expect(client.send(new ListQueuesCommand({}))).rejects.toThrow('served in thread');
    serveInThread(endpoint);
    expect(served).toEqual(['AmazonSQS.ListQueues']);
  });
});
