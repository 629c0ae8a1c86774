import { App } from 'aws-cdk-lib';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { bundlePath, deployedEntries, esbuildOptions } from './bundles.ts';
import { type FunctionSpec, LAMBDA_BUNDLING, ServiceFunctions } from './constructs/service-functions.ts';
import { TocsinStack } from './stack.ts';

afterEach(() => vi.restoreAllMocks());

describe('the bundles the local runtime and the tests build', () => {
  it('are those of every function the stack deploys, no more, no fewer', () => {
    const deployed: string[] = [];
    const add = ServiceFunctions.prototype.add;
    vi.spyOn(ServiceFunctions.prototype, 'add').mockImplementation(function (
      this: ServiceFunctions,
      id: string,
      spec: FunctionSpec,
    ) {
      deployed.push(spec.entry);
      return add.call(this, id, spec);
    });
    new TocsinStack(new App(), 'Tocsin-test', {
      env: { account: '123456789012', region: 'eu-west-1' },
      envName: 'test',
      skipBundling: true,
    });
    expect(deployed.length).toBeGreaterThan(40);
    expect(
      deployedEntries()
        .map((e) => e.entry)
        .sort(),
    ).toEqual([...new Set(deployed)].sort());
  });

  it('are built with the CDK bundling settings, one output per entry', () => {
    const entries = ['functions/http/health/get-health.ts', 'functions/queue/process-alarm.ts'];
    const o = esbuildOptions(entries, '/tmp/out');
    const b = LAMBDA_BUNDLING;
    expect(o).toMatchObject({
      bundle: true,
      platform: 'node',
      format: b.format,
      target: b.target,
      minify: b.minify,
      sourcemap: b.sourceMap,
      sourcesContent: b.sourcesContent,
      mainFields: b.mainFields,
      external: b.externalModules,
      banner: { js: b.banner },
      outExtension: { '.js': '.mjs' },
    });
    expect(o.entryPoints).toEqual([
      { in: entries[0], out: 'functions/http/health/get-health/index' },
      { in: entries[1], out: 'functions/queue/process-alarm/index' },
    ]);
    expect(bundlePath(entries[1])).toBe('functions/queue/process-alarm/index.mjs');
  });
});
