import { readFileSync } from 'node:fs';
import type { Metafile } from 'esbuild';
import { beforeAll, describe, expect, it } from 'vitest';
import { BUNDLES_DOC, sizesTable, withSizes } from '../scripts/gen-bundle-sizes.ts';
import { type ValidatorFile, validatorFiles } from '../scripts/gen-validators.ts';
import { bundleMetafile, bundleParts, deployedEntries, GENERATED_VALIDATORS } from './bundles.ts';

/**
 * What each deployed function's bundle carries, from esbuild's metafile of every bundle as the CDK
 * builds it (built once, in memory: tens of seconds on two cores).
 */
let metafile: Metafile;
let generated: ValidatorFile[];

beforeAll(async () => {
  [metafile, generated] = await Promise.all([bundleMetafile(), validatorFiles()]);
}, 180_000);

const HEALTH = 'functions/http/health/get-health.ts';

describe('each function bundle', () => {
  it('carries a generated validator only with the module that validates with it', () => {
    // Arrange
    const userOf = new Map(generated.map((f) => [f.file, f.user]));
    const strays: string[] = [];
    let carried = 0;

    // Act
    for (const { entry } of deployedEntries()) {
      const { inputs } = bundleParts(metafile, entry);
      for (const file of Object.keys(inputs).filter((f) => f.startsWith(GENERATED_VALIDATORS))) {
        carried++;
        const user = userOf.get(file);
        if (!user || !(user in inputs)) strays.push(`${entry} carries ${file} (for ${user ?? 'nobody'})`);
      }
    }

    // Assert
    expect(carried).toBeGreaterThan(40);
    expect(strays).toEqual([]);
  });

  it("carries a route's validator only in that route's function", () => {
    // Arrange: a route's validator file mirrors its handler's path
    const routeValidators = generated.filter((f) => f.user.startsWith('functions/'));
    const holders = new Map<string, string[]>();

    // Act
    for (const { entry } of deployedEntries()) {
      for (const f of routeValidators) {
        if (f.file in bundleParts(metafile, entry).inputs)
          holders.set(f.file, [...(holders.get(f.file) ?? []), entry]);
      }
    }

    // Assert: one function each, the handler's own (or the function of its group, which imports it)
    expect(routeValidators.length).toBeGreaterThan(40);
    for (const f of routeValidators) {
      const [holder, ...others] = holders.get(f.file) ?? [];
      expect({ file: f.file, others }).toEqual({ file: f.file, others: [] });
      expect(f.user in bundleParts(metafile, holder).inputs).toBe(true);
    }
  });

  it('of GET /health stays under 150 KB without the AWS SDK, and carries no validator nor ajv', () => {
    // Act
    const health = bundleParts(metafile, HEALTH);
    const files = Object.keys(health.inputs);

    // Assert
    expect(health.bytes - health.sdkBytes).toBeLessThan(150 * 1024);
    expect(
      files.filter((f) => f.startsWith(GENERATED_VALIDATORS) || f.includes('node_modules/ajv/')),
    ).toEqual([]);
  });
});

describe('docs/bundles.md', () => {
  it('lists each function bundle as npm run gen:bundle-sizes writes it', () => {
    // Arrange
    const committed = readFileSync(BUNDLES_DOC, 'utf8');

    // Act
    const wanted = withSizes(committed, sizesTable(metafile));

    // Assert
    expect(wanted.split('\n').filter((l) => l.startsWith('| `functions/')).length).toBe(
      deployedEntries().length,
    );
    expect(committed === wanted, 'docs/bundles.md is stale: run npm run gen:bundle-sizes').toBe(true);
  });
});
