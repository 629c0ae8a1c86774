import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import type { Context } from 'aws-lambda';
import { projectRoot } from './paths.ts';

// biome-ignore lint/suspicious/noExplicitAny: a Lambda handler takes any event
export type LambdaHandler = (event: any, context: Context) => Promise<any>;

const loaded = new Map<string, Promise<LambdaHandler>>();

/** Imports a handler module once (after the environment has been set) and returns its `handler`. */
export function loadHandler(file: string): Promise<LambdaHandler> {
  let p = loaded.get(file);
  if (!p) {
    p = import(pathToFileURL(`${projectRoot}/${file}`).href).then((m) => {
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
