import { nowSeconds } from '../clock.ts';
import { hmacSign } from '../domain/auth/signature.ts';

/**
 * The pre-traffic check of a gradual deployment (infra/constructs/deployments.ts): before CodeDeploy
 * moves any traffic to a new version of a function deployed through its alias, it invokes this check,
 * which calls that version once as its callers would and reports the deployment's lifecycle hook
 * Succeeded or Failed (a failure stops the deployment and leaves the alias where it was):
 *
 * - `report` (POST /alarm/report and /alarm/test): a test report signed with the check task's token
 *   must be answered code 0 (without a check task: an unsigned one must be refused with an envelope);
 * - `monitors` (the monitor adapters): a request without credentials must be refused with an envelope;
 * - `consumer` (a queue consumer): an empty batch must be answered with no failures;
 * - `schedule` (the due runner): a run must finish without an error.
 */
export type Probe = 'report' | 'monitors' | 'consumer' | 'schedule';

/** One function the check knows: its name, the version this deploy publishes and how to call it. */
export interface CheckTarget {
  functionName: string;
  version: string;
  probe: Probe;
}

/** CodeDeploy's event for a lifecycle hook. */
export interface HookEvent {
  DeploymentId: string;
  LifecycleEventHookExecutionId: string;
}

export interface InvokeResult {
  /** The function's answer, parsed; undefined when it failed (FunctionError) or answered nothing. */
  payload: unknown;
  /** The error the function failed with. */
  error?: string;
}

/** What a deployment moves: the function and the version its AppSpec names (when it names them). */
export interface DeploymentTarget {
  functionName?: string;
  version?: string;
}

export interface CheckDeps {
  /** The function and target version of a deployment (CodeDeploy's GetDeployment, its AppSpec). */
  deploymentOf: (deploymentId: string) => Promise<DeploymentTarget>;
  invoke: (functionName: string, version: string, event: unknown) => Promise<InvokeResult>;
  report: (event: HookEvent, status: 'Succeeded' | 'Failed') => Promise<void>;
  /** The check task's id and token, when the stack names one. */
  checkTask: () => Promise<{ id: number; token: string } | undefined>;
}

/** An API Gateway HTTP API (payload 2.0) event for a route, as the API would send it. */
export function httpEvent(routeKey: string, body: unknown): Record<string, unknown> {
  const [method, path] = routeKey.split(' ');
  const now = Date.now();
  return {
    version: '2.0',
    routeKey,
    rawPath: path,
    rawQueryString: '',
    headers: { 'content-type': 'application/json', 'user-agent': 'tocsin-deploy-check' },
    requestContext: {
      http: { method, path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'tocsin-deploy-check' },
      requestId: `deploy-check-${now}`,
      routeKey,
      stage: '$default',
      time: new Date(now).toISOString(),
      timeEpoch: now,
    },
    body: JSON.stringify(body),
    isBase64Encoded: false,
  };
}

type HttpAnswer = { statusCode?: number; body?: string };

/** The envelope code of an HTTP answer, or undefined when it is not one. */
function codeOf(answer: unknown): number | undefined {
  try {
    const code = (JSON.parse(String((answer as HttpAnswer).body)) as { code?: unknown }).code;
    return typeof code === 'number' ? code : undefined;
  } catch {
    return undefined;
  }
}

/** Calls one target's version as its callers would; returns why it failed, or undefined. */
export async function probe(target: CheckTarget, deps: CheckDeps): Promise<string | undefined> {
  const call = (event: unknown) => deps.invoke(target.functionName, target.version, event);
  switch (target.probe) {
    case 'report': {
      const task = await deps.checkTask();
      const ts = String(nowSeconds());
      const body = task ? { taskid: task.id, timestamp: ts, sign: hmacSign(task.token, task.id, ts) } : {};
      const out = await call(httpEvent('POST /alarm/test', body));
      if (out.error) return `failed: ${out.error}`;
      const code = codeOf(out.payload);
      const status = (out.payload as HttpAnswer | undefined)?.statusCode;
      if (status !== 200 || code === undefined) return `answered HTTP ${status} without an envelope`;
      if (task && code !== 0) return `refused the signed test report of task ${task.id} (code ${code})`;
      if (!task && code === 0) return 'accepted an unsigned test report';
      return undefined;
    }
    case 'monitors': {
      const out = await call(httpEvent('POST /alarm/jsonbody', {}));
      if (out.error) return `failed: ${out.error}`;
      const status = (out.payload as HttpAnswer | undefined)?.statusCode ?? 0;
      if (status < 400 || status >= 500 || codeOf(out.payload) === undefined)
        return `answered a report without credentials with HTTP ${status}`;
      return undefined;
    }
    case 'consumer': {
      const out = await call({ Records: [] });
      if (out.error) return `failed: ${out.error}`;
      const failures = (out.payload as { batchItemFailures?: unknown[] } | undefined)?.batchItemFailures;
      if (!Array.isArray(failures) || failures.length > 0)
        return `answered an empty batch with ${JSON.stringify(out.payload)}`;
      return undefined;
    }
    case 'schedule': {
      const out = await call({ source: 'tocsin.deploy-check', 'detail-type': 'Scheduled Event', detail: {} });
      return out.error ? `failed: ${out.error}` : undefined;
    }
  }
}

/**
 * The AppSpec of a Lambda deployment (JSON or YAML, as CloudFormation writes it) read for its one
 * function's `Name` and `TargetVersion`.
 */
export function appSpecTarget(content: string | undefined): DeploymentTarget {
  if (!content) return {};
  const field = (name: string) =>
    new RegExp(`(?:^|[^A-Za-z])"?${name}"?\\s*:\\s*"?([^"\\s,}]+)"?`, 'm').exec(content)?.[1];
  return { functionName: field('Name'), version: field('TargetVersion') };
}

/** Whether an AppSpec's `Name` (a name, or an ARN) is the function `name`. */
const sameFunction = (named: string, name: string) =>
  named === name || named.endsWith(`:function:${name}`) || named.endsWith(`:${name}`);

/**
 * Checks the new version of the deployment's function (every target at the version this deploy
 * publishes, when the deployment does not say which) and reports the hook's status. Returns the
 * failures (empty: Succeeded).
 */
export async function preTrafficCheck(
  event: HookEvent,
  targets: CheckTarget[],
  deps: CheckDeps,
): Promise<string[]> {
  let failures: string[];
  try {
    const moved = await deps.deploymentOf(event.DeploymentId);
    const mine = targets
      .filter((t) => moved.functionName !== undefined && sameFunction(moved.functionName, t.functionName))
      .map((t) => ({ ...t, version: moved.version ?? t.version }));
    const checked = mine.length > 0 ? mine : targets;
    const results = await Promise.all(checked.map((t) => probe(t, deps)));
    failures = checked.flatMap((t, i) =>
      results[i] ? [`${t.functionName}:${t.version} (${t.probe}) ${results[i]}`] : [],
    );
  } catch (err) {
    failures = [`the check could not run: ${(err as Error).message}`];
  }
  await deps.report(event, failures.length === 0 ? 'Succeeded' : 'Failed');
  return failures;
}
