import { failed, rejected, type SendOutcome, sanitizeDetail } from './types.ts';

const TRANSIENT =
  /Throttl|TooManyRequests|LimitExceeded|InternalError|InternalFailure|ServiceUnavailable|Timeout|KMSThrottling/i;

/** An AWS SDK error as an outcome: server faults, throttling and no answer are retried; the rest refused. */
export function awsErrorOutcome(err: unknown): SendOutcome {
  const e = err as {
    name?: string;
    message?: string;
    $fault?: string;
    $retryable?: unknown;
    $metadata?: { httpStatusCode?: number };
    code?: string;
  };
  const code = e.name && e.name !== 'Error' ? e.name : (e.code ?? 'error');
  const status = e.$metadata?.httpStatusCode;
  const transient =
    Boolean(e.$retryable) || e.$fault === 'server' || TRANSIENT.test(code) || status === undefined;
  return transient ? failed(code, sanitizeDetail(e.message)) : rejected(code, sanitizeDetail(e.message));
}

/**
 * Options of the providers' AWS clients. One attempt per call (`maxAttempts: 1`): the queue retries, so
 * every provider call is an attempt record and a timed-out call is not silently repeated by the SDK.
 * A configured endpoint (a local fake) gets placeholder credentials when none are set.
 */
export function awsClientOptions(region: string, endpoint: string | undefined) {
  return {
    region,
    maxAttempts: 1,
    ...(endpoint ? { endpoint } : {}),
    ...(endpoint && !process.env.AWS_ACCESS_KEY_ID
      ? { credentials: { accessKeyId: 'local', secretAccessKey: 'local' } }
      : {}),
  };
}
