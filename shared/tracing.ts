import type { Tracer } from '@aws-lambda-powertools/tracer';
import { METRICS } from './contracts/metrics.ts';

/**
 * X-Ray tracing with Powertools Tracer: a subsegment for every AWS SDK call (the clients are wrapped
 * with `traced`) and for every outbound HTTP exchange (`tracedHttp`). On only in a Lambda function
 * (`AWS_EXECUTION_ENV` set, not `sam local`) unless `POWERTOOLS_TRACE_ENABLED=false`; never in the
 * local runtime (`TOCSIN_LOCAL`). Off, it costs nothing: the tracer (Powertools and the X-Ray SDK,
 * tens of milliseconds to import) is not even loaded, and clients are left as they are.
 */
export function tracingWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  const on = (v: string | undefined) => ['1', 'true', 'yes'].includes((v ?? '').toLowerCase());
  const lambda = Boolean(env.AWS_EXECUTION_ENV) && env.AWS_EXECUTION_ENV !== 'AWS_Lambda_amplify-mock';
  return (
    lambda && !on(env.AWS_SAM_LOCAL) && !on(env.TOCSIN_LOCAL) && env.POWERTOOLS_TRACE_ENABLED !== 'false'
  );
}

async function loadTracer(): Promise<Tracer> {
  const { Tracer } = await import('@aws-lambda-powertools/tracer');
  // No global patch of node:http/https and fetch: it would record whole URLs (paths and queries carry
  // robot and webhook tokens). Outbound calls get their own subsegment from tracedHttp instead.
  return new Tracer({ serviceName: METRICS.service, captureHTTPsRequests: false });
}

/** Decided once per container, from the environment it starts with. */
const tracer: Tracer | undefined = tracingWanted() ? await loadTracer() : undefined;

export function tracingEnabled(): boolean {
  return tracer !== undefined;
}

/** Wraps an AWS SDK v3 client so each of its calls is a subsegment (service, operation, table or queue). */
export function traced<T>(client: T): T {
  return tracer ? tracer.captureAWSv3Client(client) : client;
}

/** What an outbound exchange came to: an HTTP status, or why there was none. */
export interface HttpOutcome {
  status?: number;
  failure?: string;
}

/**
 * Runs one outbound HTTP exchange in a subsegment named by the target's host, recording the method,
 * the origin (never the path or query: robot and webhook URLs carry tokens), the status (429 throttle,
 * 4xx error, 5xx fault) or the failure (timeout, network, blocked: an error).
 */
export async function tracedHttp<R>(
  target: URL,
  method: string,
  exchange: () => Promise<R>,
  outcome: (result: R) => HttpOutcome,
): Promise<R> {
  const parent = tracer?.getSegment();
  if (!parent) return exchange();
  const sub = parent.notTraced
    ? parent.addNewSubsegmentWithoutSampling(target.host)
    : parent.addNewSubsegment(target.host);
  sub.addAttribute('namespace', 'remote');
  const request = { method, url: `${target.protocol}//${target.host}` };
  try {
    const result = await exchange();
    const { status, failure } = outcome(result);
    sub.addAttribute('http', { request, ...(status ? { response: { status } } : {}) });
    if (status === 429) sub.addThrottleFlag();
    if (status !== undefined && status >= 500) sub.addFaultFlag();
    else if ((status !== undefined && status >= 400) || failure) sub.addErrorFlag();
    if (failure) sub.addMetadata('failure', failure, 'outbound');
    return result;
  } catch (err) {
    sub.addAttribute('http', { request });
    sub.addErrorFlag();
    throw err;
  } finally {
    sub.close();
  }
}
