import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { expect } from 'vitest';
import { NOT_FOUND_HANDLER, deployedRoutes } from './constructs/http-api.ts';
import { pascal } from './constructs/queues.ts';
import { type Access, access } from './access.ts';
import { routeEntry } from './definitions.ts';
import type { QueueName } from '../shared/contracts/messages.ts';
import { deployCheck, queues, schedule } from './consumers.ts';
import { PROJECT_ROOT, TocsinStack } from './stack.ts';

/** Test support of the CDK assertion tests: the synthesized stack and readers of its template. */

export type Resource = {
  Type: string;
  Properties: Record<string, unknown>;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
};
export type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown };

export const XRAY_ACTIONS = ['xray:PutTelemetryRecords', 'xray:PutTraceSegments'];

/** The context `cdk synth` runs with (feature flags), so that the tests see the deployed template. */
export const CDK_CONTEXT = (
  JSON.parse(readFileSync(join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> }
).context;

export type StackProps = Partial<ConstructorParameters<typeof TocsinStack>[2]>;

export function synthStack(props: StackProps = {}): { stack: TocsinStack; template: Template } {
  const app = new App({ context: CDK_CONTEXT });
  const stack = new TocsinStack(app, 'Tocsin-test', {
    env: { account: '123456789012', region: 'eu-west-1' },
    envName: 'test',
    skipBundling: true,
    ...props,
  });
  return { stack, template: Template.fromStack(stack) };
}

export function synth(props: StackProps = {}): Template {
  return synthStack(props).template;
}

/** Synthesis takes a second or two, but much longer on a machine busy with other suites. */
export const SYNTH_TIMEOUT_MS = 120_000;

export let template: Template;
export let resources: Record<string, Resource>;
export let outputs: Record<string, { Value: unknown }>;

/** Synthesizes the stack once for a test file (`beforeAll(synthOnce, SYNTH_TIMEOUT_MS)`). */
export function synthOnce(): void {
  template = synth();
  const json = template.toJSON() as { Resources: Record<string, Resource>; Outputs: typeof outputs };
  resources = json.Resources;
  outputs = json.Outputs;
}

/** Runs `read` with the readers below looking at another template's resources. */
export function withResources<T>(other: Record<string, Resource>, read: () => T): T {
  const saved = resources;
  resources = other;
  try {
    return read();
  } finally {
    resources = saved;
  }
}

/**
 * Logical id of the one Lambda whose description names `entry` (every function says which handler it
 * runs: a route's handler, or its function group's entry). Routes are found by route key
 * (functionOfRoute).
 */
export function functionFor(entry: string): string {
  const ids = Object.entries(resources)
    .filter(([, r]) => r.Type === 'AWS::Lambda::Function' && r.Properties.Description === `tocsin ${entry}`)
    .map(([id]) => id);
  expect(ids, entry).toHaveLength(1);
  return ids[0];
}

/** Logical id of the Lambda behind a route key (`POST /alarm/report`, `$default`). */
export function functionOfRoute(routeKey: string): string {
  const routes = ofType('AWS::ApiGatewayV2::Route').filter(([, r]) => r.Properties.RouteKey === routeKey);
  expect(routes, routeKey).toHaveLength(1);
  const integrationId = /"Ref":"([^"]+)"/.exec(JSON.stringify(routes[0][1].Properties.Target))![1];
  return invokedFunction(resources[integrationId].Properties.IntegrationUri);
}

/**
 * The Lambda a reference invokes: the function itself (its Arn or Ref), or the function of an alias
 * (its Ref, or `<name>:live` taken from the alias's ARN).
 */
export function invokedFunction(ref: unknown): string {
  const r = ref as { 'Fn::GetAtt'?: [string, string] };
  const id = r['Fn::GetAtt']?.[0] ?? /"Ref":"([^"]+)"/.exec(JSON.stringify(ref))?.[1];
  expect(id, JSON.stringify(ref)).toBeTypeOf('string');
  const target = resources[id!];
  if (target.Type === 'AWS::Lambda::Alias') return (target.Properties.FunctionName as { Ref: string }).Ref;
  expect(target.Type).toBe('AWS::Lambda::Function');
  return id!;
}

export function ofType(type: string): [string, Resource][] {
  return Object.entries(resources).filter(([, r]) => r.Type === type);
}

/** Logical id behind a `{Ref}` output such as AlarmQueueUrl. */
export function refOfOutput(name: string): string {
  const value = outputs[name]?.Value as { Ref?: string } | undefined;
  expect(value?.Ref, name).toBeTypeOf('string');
  return value!.Ref!;
}

export function queueId(name: QueueName): string {
  return refOfOutput(`${pascal(name)}QueueUrl`);
}

/** All IAM statements attached to the function's execution role. */
export function statementsOf(functionId: string): Statement[] {
  const role = (resources[functionId].Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
  const inline = (
    (resources[role].Properties.Policies ?? []) as { PolicyDocument: { Statement: Statement[] } }[]
  ).flatMap((p) => p.PolicyDocument.Statement);
  return ofType('AWS::IAM::Policy')
    .filter(([, p]) => (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === role))
    .flatMap(([, p]) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement)
    .concat(inline);
}

export function actionsOn(statements: Statement[], resourceId: string): Set<string> {
  const mentions = (res: unknown) => JSON.stringify(res ?? null).includes(`"${resourceId}"`);
  return new Set(
    statements
      .filter((s) => s.Effect === 'Allow' && mentions(s.Resource))
      .flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action])),
  );
}

export function allActions(statements: Statement[]): Set<string> {
  return new Set(statements.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action])));
}

export const tableId = () => refOfOutput('TableName');
export const secretId = () => refOfOutput('SealKeySecretArn');

export interface FunctionSpec {
  /** Handler entry; with `routeKey` for the route's own Lambda (routes may share a handler file). */
  entry: string;
  routeKey?: string;
  access: Access;
}

/**
 * Every deployed function (one per route or function group, `$default`, consumer, schedule and the
 * deployments' pre-traffic check) and what it may do: a group's function may do what any of its routes
 * may.
 */
export function functionSpecs(): FunctionSpec[] {
  const byFunction = new Map<string, FunctionSpec>();
  for (const r of deployedRoutes()) {
    const spec: FunctionSpec = { entry: routeEntry(r), routeKey: `${r.method} ${r.path}`, access: r.access };
    const key = r.fn ?? `${r.method} ${r.path}`;
    const other = byFunction.get(key);
    byFunction.set(key, other ? { ...other, access: access(other.access, spec.access) } : spec);
  }
  return [
    ...byFunction.values(),
    { entry: NOT_FOUND_HANDLER, routeKey: '$default', access: {} },
    ...queues.map((q) => ({ entry: q.consumer, access: q.access })),
    { entry: schedule.handler, access: schedule.access },
    { entry: deployCheck.handler, access: deployCheck.access },
  ];
}

/** Logical id of a spec's Lambda in the current `resources`. */
export function functionOf(spec: FunctionSpec): string {
  return spec.routeKey ? functionOfRoute(spec.routeKey) : functionFor(spec.entry);
}

/** A readable name for assertion messages. */
export function labelOf(spec: FunctionSpec): string {
  return spec.routeKey ? `${spec.routeKey} (${spec.entry})` : spec.entry;
}
