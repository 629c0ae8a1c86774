import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { afterAll, describe, expect, it } from 'vitest';
import { advanceClock, clockOffsetSeconds, nowMs, shareClock } from '../clock.ts';
import { platform, usePlatform } from '../platform.ts';
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

  it('shares the test clock and the installed platform adapter with every bundle', async () => {
    const file = await bundled(
      `export { nowMs, clockOffsetSeconds } from ${JSON.stringify(join(projectRoot, 'shared/clock.ts'))};
       export { platform } from ${JSON.stringify(join(projectRoot, 'shared/platform.ts'))};
       export { perContainer } from ${JSON.stringify(join(projectRoot, 'shared/container.ts'))};`,
      'copies',
    );
    const copy = (await import(pathToFileURL(file).href)) as {
      nowMs: () => number;
      clockOffsetSeconds: () => number;
      platform: typeof platform;
      perContainer: <T>(make: () => T) => () => T;
    };
    const before = clockOffsetSeconds();
    advanceClock(3600);
    expect(copy.clockOffsetSeconds()).toBe(before + 3600);
    shareClock(new SharedArrayBuffer(8));
    advanceClock(60);
    expect(copy.clockOffsetSeconds()).toBe(before + 3660);
    expect(Math.abs(copy.nowMs() - nowMs())).toBeLessThan(1000);

    // The adapter this thread installed (the local runtime's, from its sources) is the bundle's too.
    const aws = copy.platform();
    const asked: object[] = [];
    const adapter = {
      ...aws,
      containerState<T>(slot: object, make: () => T): T {
        asked.push(slot);
        return make();
      },
    };
    usePlatform(adapter);
    try {
      const state = copy.perContainer(() => 'made');
      expect(copy.platform()).toBe(adapter);
      expect(platform()).toBe(adapter);
      expect(state()).toBe('made');
      expect(asked).toHaveLength(1);
    } finally {
      usePlatform(undefined);
    }
    // Withdrawn, each copy runs on its own AWS adapter again.
    expect(copy.platform()).toBe(aws);
  });
});
