import type { Construct } from 'constructs';
import { DEFAULT_INTAKE_CONCURRENCY } from './constructs/http-api.ts';
import type { FunctionGroup } from './definitions.ts';
import { queues } from './consumers.ts';
import type { TocsinStackProps } from './stack.ts';

/**
 * The stack `cdk synth|deploy` builds, from the CDK context (`-c name=value`, or `context` in cdk.json):
 * its id `Tocsin-<envName>` and its props. Without `-c envName` it is `Tocsin-dev`: no default ever
 * names production. A production stack is envName `production` or `-c production=true` (with an
 * explicit envName); TocsinStack refuses one without an alarm destination.
 */
export function stackFromContext(scope: Construct): { id: string; props: TocsinStackProps } {
  function context(name: string): string | undefined {
    const value = scope.node.tryGetContext(name);
    return value === undefined || value === null || value === '' ? undefined : String(value);
  }

  function flag(name: string, fallback: boolean): boolean {
    const value = context(name);
    if (value === undefined) return fallback;
    if (['1', 'true', 'yes'].includes(value.toLowerCase())) return true;
    if (['0', 'false', 'no'].includes(value.toLowerCase())) return false;
    throw new Error(`context ${name} must be true or false`);
  }

  /** A context value holding variables: an object in cdk.json, or a JSON string given with `-c`. */
  function variables(name: string): Record<string, string> | undefined {
    const raw = scope.node.tryGetContext(name);
    if (raw === undefined || raw === null || raw === '') return undefined;
    const value = typeof raw === 'string' ? JSON.parse(raw) : raw;
    if (typeof value !== 'object' || Array.isArray(value))
      throw new Error(`context ${name} must be an object`);
    return Object.fromEntries(
      Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, String(v)]),
    );
  }

  /**
   * A map of instance counts by name (`intakeConcurrency`, `consumerConcurrency`): an object, or `off`
   * (or `0`) for 0 everywhere (no reservation, no cap).
   */
  function counts<K extends string>(
    name: string,
    keys: readonly K[],
  ): Partial<Record<K, number>> | undefined {
    const raw = context(name);
    if (raw !== undefined && ['off', '0', 'none'].includes(raw.toLowerCase()))
      return Object.fromEntries(keys.map((k) => [k, 0])) as Record<K, number>;
    const value = variables(name);
    if (value === undefined) return undefined;
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => {
        const n = Number(v);
        if (!Number.isInteger(n) || n < 0) throw new Error(`context ${name}.${k} must be a whole number`);
        return [k, n];
      }),
    ) as Partial<Record<K, number>>;
  }

  /** A throttle context value: `{"rateLimit": n, "burstLimit": n}` (object or JSON string). */
  function throttle(name: string): { rateLimit: number; burstLimit: number } | undefined {
    const value = variables(name);
    if (value === undefined) return undefined;
    const rateLimit = Number(value.rateLimit);
    const burstLimit = Number(value.burstLimit);
    if (!(rateLimit > 0) || !(burstLimit > 0))
      throw new Error(`context ${name} needs rateLimit and burstLimit`);
    return { rateLimit, burstLimit };
  }

  /** A task id (1 to 2^53-1), or undefined. */
  function taskId(name: string): number | undefined {
    const raw = context(name);
    if (raw === undefined) return undefined;
    const n = Number(raw);
    if (!Number.isSafeInteger(n) || n < 1) throw new Error(`context ${name} must be a task id`);
    return n;
  }

  // No default that deploys production: without -c envName this is the development stack.
  const envName = context('envName') ?? 'dev';
  if (!/^[a-z][a-z0-9-]{0,30}$/.test(envName)) throw new Error('context envName must match [a-z][a-z0-9-]*');
  const production = envName === 'production' || flag('production', false);
  if (production && context('envName') === undefined)
    throw new Error('context production=true needs an explicit -c envName (the stack is named after it)');
  if (envName === 'production' && !flag('production', true))
    throw new Error('envName production is always a production stack: drop -c production=false');
  const alarmDestination = context('alarmDestination');
  if (alarmDestination !== undefined && alarmDestination !== 'none')
    throw new Error(
      "context alarmDestination takes only 'none' (use alarmEmail or alarmTopicArn for a destination)",
    );
  return {
    id: `Tocsin-${envName}`,
    props: {
      env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
      description: `tocsin alarm task management service (${envName})`,
      envName,
      legacySign: flag('legacySign', true),
      reportTimeZone: context('reportTimeZone') ?? 'UTC',
      logLevel: context('logLevel') ?? 'INFO',
      tuning: variables('tuning'),
      notifyEnvironment: variables('notify'),
      skipBundling: flag('skipBundling', false),
      apiThrottle: throttle('apiThrottle'),
      ingestThrottle: throttle('ingestThrottle'),
      production,
      alarmEmail: context('alarmEmail'),
      alarmTopicArn: context('alarmTopicArn'),
      alarmDestination,
      intakeConcurrency: counts(
        'intakeConcurrency',
        Object.keys(DEFAULT_INTAKE_CONCURRENCY) as FunctionGroup[],
      ),
      consumerConcurrency: counts(
        'consumerConcurrency',
        queues.map((q) => q.name),
      ),
      reservedConcurrency: counts('reservedConcurrency', ['alarm', 'due'] as const),
      deployCheckTask: taskId('deployCheckTask'),
      ignoreDeploymentAlarms: flag('ignoreDeploymentAlarms', false),
      singleSignOn: {
        issuer: context('oidcIssuer'),
        clientId: context('oidcClientId'),
        allowUnverifiedEmail: flag('oidcAllowUnverifiedEmail', false),
      },
      publicBaseUrl: context('publicBaseUrl'),
    },
  };
}
