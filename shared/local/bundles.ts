import type { CachedBundles } from '../../infra/bundles.ts';
import { BUNDLE_DIR_VARIABLE } from './lambda.ts';

/**
 * Bundle mode of the local runtime (`npm start -- --bundles`, `npm run invoke -- --bundles`): builds
 * every deployed function's bundle with the CDK's settings, or reuses them from the cache when no
 * source changed (infra/bundles.ts), and makes this process and the threads it starts from now on
 * import them instead of the TypeScript sources (shared/local/lambda.ts). Off: nothing is loaded
 * (the bundler needs the CDK library, a few seconds to import).
 */
export async function useBundles(on: boolean): Promise<CachedBundles | undefined> {
  if (!on) return undefined;
  const { cachedBundles } = await import('../../infra/bundles.ts');
  const bundles = await cachedBundles();
  process.env[BUNDLE_DIR_VARIABLE] = bundles.dir;
  return bundles;
}
