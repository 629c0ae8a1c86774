import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Context } from 'aws-lambda';
import { projectRoot } from './paths.ts';

// biome-ignore lint/suspicious/noExplicitAny: a Lambda handler takes any event
export type LambdaHandler = (event: any, context: Context) => Promise<any>;

const loaded = new Map<string, Promise<LambdaHandler>>();

/**
 * Bundle mode: the local runtime runs each deployed function's bundle, the very file the CDK deploys,
 * instead of its TypeScript source. Each bundle carries its own copy of the shared modules (config,
 * caches, clients), as each function does on AWS; what the local stack shares between them lives on
 * the global object (the test clock, the platform adapter: shared/platform.ts).
 *
 * The variable that makes the local runtime run the deployed bundles: a directory of bundles
 * (infra/bundles.ts; `bundles.json` maps each deployed entry to its bundle). Set by `npm start --
 * --bundles` before anything is loaded; worker threads inherit it.
 */
export const BUNDLE_DIR_VARIABLE = 'TOCSIN_BUNDLE_DIR';

let bundles: { dir: string; entries: Record<string, string> } | undefined;

/** The file the local runtime imports for a handler entry: its bundle in bundle mode, else its source. */
export function handlerModule(file: string): string {
  const dir = process.env[BUNDLE_DIR_VARIABLE];
  if (!dir) return join(projectRoot, file);
  if (bundles?.dir !== dir) {
    // The directory's manifest (BUNDLES_MANIFEST of infra/bundles.ts, not imported: it loads the CDK).
    const entries = JSON.parse(readFileSync(join(dir, 'bundles.json'), 'utf8')) as Record<string, string>;
    bundles = { dir, entries };
  }
  const bundle = bundles.entries[file];
  // Not deployed (the local stack's own routes): its source.
  return bundle ? join(dir, bundle) : join(projectRoot, file);
}

/**
 * Imports a handler module once (after the environment has been set) and returns its `handler`: the
 * TypeScript source, or in bundle mode the bundle the stack deploys.
 */
export function loadHandler(file: string): Promise<LambdaHandler> {
  let p = loaded.get(file);
  if (!p) {
    p = import(pathToFileURL(handlerModule(file)).href).then((m) => {
      if (typeof m.handler !== 'function') throw new Error(`${file} does not export a handler`);
      return m.handler as LambdaHandler;
    });
    loaded.set(file, p);
  }
  return p;
}

export function lambdaContext(functionName: string, timeoutMs = 30_000): Context {
  const started = Date.now();
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: '$LATEST',
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: '512',
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: 'local',
    getRemainingTimeInMillis: () => Math.max(0, timeoutMs - (Date.now() - started)),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}
