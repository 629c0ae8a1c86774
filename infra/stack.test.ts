import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App, Validations } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { CURRENTLY_RECOMMENDED_FLAGS } from 'aws-cdk-lib/cx-api';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  ACCESS_LOG_FORMAT,
  DEFAULT_API_THROTTLE,
  DEFAULT_INGEST_THROTTLE,
  NOT_FOUND_HANDLER,
  deployedRoutes,
} from './constructs/http-api.ts';
import { NOTIFY_SECRET_VARIABLES } from './constructs/notify-providers.ts';
import { pascal } from './constructs/queues.ts';
import { NOTIFY_SECRET_NAMES } from '../shared/config/env.ts';
import { type Access, access, accessKey } from './access.ts';
import { type QueueName, queues, routeEntry, routes, schedule, table } from './definitions.ts';
import { METRICS } from './metrics.ts';
import { PROJECT_ROOT, TocsinStack } from './stack.ts';

type Resource = {
  Type: string;
  Properties: Record<string, unknown>;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
};
type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown };

const XRAY_ACTIONS = ['xray:PutTelemetryRecords', 'xray:PutTraceSegments'];

/** The context `cdk synth` runs with (feature flags), so that the tests see the deployed template. */
const CDK_CONTEXT = (
  JSON.parse(readFileSync(join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> }
).context;

type StackProps = Partial<ConstructorParameters<typeof TocsinStack>[2]>;

function synthStack(props: StackProps = {}): { stack: TocsinStack; template: Template } {
  const app = new App({ context: CDK_CONTEXT });
  const stack = new TocsinStack(app, 'Tocsin-test', {
    env: { account: '123456789012', region: 'eu-west-1' },
    envName: 'test',
    skipBundling: true,
    ...props,
  });
  return { stack, template: Template.fromStack(stack) };
}

function synth(props: StackProps = {}): Template {
  return synthStack(props).template;
}

/** Synthesis takes a second or two, but much longer on a machine busy with other suites. */
const SYNTH_TIMEOUT_MS = 120_000;

let template: Template;
let resources: Record<string, Resource>;
let outputs: Record<string, { Value: unknown }>;

beforeAll(() => {
  template = synth();
  const json = template.toJSON() as { Resources: Record<string, Resource>; Outputs: typeof outputs };
  resources = json.Resources;
  outputs = json.Outputs;
}, SYNTH_TIMEOUT_MS);

/**
 * Logical id of the one Lambda whose description names `entry` (every function says which handler it
 * runs: a route's handler, or its function group's entry). Routes are found by route key
 * (functionOfRoute).
 */
function functionFor(entry: string): string {
  const ids = Object.entries(resources)
    .filter(([, r]) => r.Type === 'AWS::Lambda::Function' && r.Properties.Description === `tocsin ${entry}`)
    .map(([id]) => id);
  expect(ids, entry).toHaveLength(1);
  return ids[0];
}

/** Logical id of the Lambda behind a route key (`POST /alarm/report`, `$default`). */
function functionOfRoute(routeKey: string): string {
  const routes = ofType('AWS::ApiGatewayV2::Route').filter(([, r]) => r.Properties.RouteKey === routeKey);
  expect(routes, routeKey).toHaveLength(1);
  const integrationId = /"Ref":"([^"]+)"/.exec(JSON.stringify(routes[0][1].Properties.Target))![1];
  return invokedFunction(resources[integrationId].Properties.IntegrationUri);
}

/**
 * The Lambda a reference invokes: the function itself (its Arn or Ref), or the function of an alias
 * (its Ref, or `<name>:live` taken from the alias's ARN).
 */
function invokedFunction(ref: unknown): string {
  const r = ref as { 'Fn::GetAtt'?: [string, string] };
  const id = r['Fn::GetAtt']?.[0] ?? /"Ref":"([^"]+)"/.exec(JSON.stringify(ref))?.[1];
  expect(id, JSON.stringify(ref)).toBeTypeOf('string');
  const target = resources[id!];
  if (target.Type === 'AWS::Lambda::Alias') return (target.Properties.FunctionName as { Ref: string }).Ref;
  expect(target.Type).toBe('AWS::Lambda::Function');
  return id!;
}

function ofType(type: string): [string, Resource][] {
  return Object.entries(resources).filter(([, r]) => r.Type === type);
}

/** Logical id behind a `{Ref}` output such as AlarmQueueUrl. */
function refOfOutput(name: string): string {
  const value = outputs[name]?.Value as { Ref?: string } | undefined;
  expect(value?.Ref, name).toBeTypeOf('string');
  return value!.Ref!;
}

function queueId(name: QueueName): string {
  return refOfOutput(`${pascal(name)}QueueUrl`);
}

/** All IAM statements attached to the function's execution role. */
function statementsOf(functionId: string): Statement[] {
  const role = (resources[functionId].Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
  const inline = (
    (resources[role].Properties.Policies ?? []) as { PolicyDocument: { Statement: Statement[] } }[]
  ).flatMap((p) => p.PolicyDocument.Statement);
  return ofType('AWS::IAM::Policy')
    .filter(([, p]) => (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === role))
    .flatMap(([, p]) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement)
    .concat(inline);
}

function actionsOn(statements: Statement[], resourceId: string): Set<string> {
  const mentions = (res: unknown) => JSON.stringify(res ?? null).includes(`"${resourceId}"`);
  return new Set(
    statements
      .filter((s) => s.Effect === 'Allow' && mentions(s.Resource))
      .flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action])),
  );
}

function allActions(statements: Statement[]): Set<string> {
  return new Set(statements.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action])));
}

const tableId = () => refOfOutput('TableName');
const secretId = () => refOfOutput('SealKeySecretArn');

interface FunctionSpec {
  /** Handler entry; with `routeKey` for the route's own Lambda (routes may share a handler file). */
  entry: string;
  routeKey?: string;
  access: Access;
}

/**
 * Every deployed function (one per route or function group, `$default`, consumer and schedule) and
 * what it may do: a group's function may do what any of its routes may.
 */
function functionSpecs(): FunctionSpec[] {
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
  ];
}

/** Logical id of a spec's Lambda in the current `resources`. */
function functionOf(spec: FunctionSpec): string {
  return spec.routeKey ? functionOfRoute(spec.routeKey) : functionFor(spec.entry);
}

/** A readable name for assertion messages. */
function labelOf(spec: FunctionSpec): string {
  return spec.routeKey ? `${spec.routeKey} (${spec.entry})` : spec.entry;
}

describe('HTTP API', () => {
  it("has one route per deployed route plus $default, each on its own Lambda or its group's (a HEAD on its GET one)", () => {
    // Arrange: a route that answers HEAD has a HEAD route on the same function
    const expected = deployedRoutes().flatMap((r) => [
      [`${r.method} ${r.path}`, routeEntry(r)],
      ...(r.head ? [[`HEAD ${r.path}`, routeEntry(r)]] : []),
    ]);
    const heads = deployedRoutes().filter((r) => r.head).length;
    expected.push(['$default', NOT_FOUND_HANDLER]);
    // Act
    const actual = ofType('AWS::ApiGatewayV2::Route').map(([, route]) => {
      const target = JSON.stringify(route.Properties.Target);
      const integrationId = /"Ref":"([^"]+)"/.exec(target)![1];
      const fn = invokedFunction(resources[integrationId].Properties.IntegrationUri);
      const description = resources[fn].Properties.Description as string;
      return [route.Properties.RouteKey, description.replace(/^tocsin /, '')];
    });
    const lambdas = actual.map(([routeKey]) => functionOfRoute(String(routeKey)));
    // Assert
    expect(heads).toBeGreaterThan(0);
    expect(actual.sort()).toEqual(expected.sort());
    const functions = new Set(deployedRoutes().map((r) => r.fn ?? `${r.method} ${r.path}`));
    expect(new Set(lambdas).size).toBe(functions.size + 1);
  });

  it('gives routes that share a handler file the same access', () => {
    const byHandler = new Map<string, string[]>();
    for (const r of deployedRoutes()) {
      const access = JSON.stringify([r.auth, accessKey(r.access)]);
      byHandler.set(r.handler, [...(byHandler.get(r.handler) ?? []), access]);
    }
    for (const [handler, accesses] of byHandler) expect(new Set(accesses).size, handler).toBe(1);
  });

  it('never deploys a /_local route', () => {
    expect(routes.some((r) => r.path.startsWith('/_local'))).toBe(true);
    const keys = ofType('AWS::ApiGatewayV2::Route').map(([, r]) => String(r.Properties.RouteKey));
    expect(keys.filter((k) => k.includes('/_local'))).toEqual([]);
    expect(JSON.stringify(resources)).not.toContain('shared/local');
  });

  it('uses Lambda proxy integrations with payload format 2.0', () => {
    const integrations = ofType('AWS::ApiGatewayV2::Integration');
    expect(integrations).toHaveLength(deployedRoutes().length + 1);
    for (const [, i] of integrations) {
      expect(i.Properties).toMatchObject({ IntegrationType: 'AWS_PROXY', PayloadFormatVersion: '2.0' });
    }
  });
});

describe('table', () => {
  it('is on-demand with PITR, TTL, the GSIs of definitions.ts and protected from deletion', () => {
    template.resourceCountIs('AWS::DynamoDB::Table', 1);
    template.hasResource('AWS::DynamoDB::Table', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
      Properties: {
        BillingMode: 'PAY_PER_REQUEST',
        DeletionProtectionEnabled: true,
        PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
        TimeToLiveSpecification: { AttributeName: table.ttlAttribute, Enabled: true },
        KeySchema: [
          { AttributeName: table.partitionKey, KeyType: 'HASH' },
          { AttributeName: table.sortKey, KeyType: 'RANGE' },
        ],
        GlobalSecondaryIndexes: table.globalSecondaryIndexes.map((g) => ({
          IndexName: g.indexName,
          KeySchema: [
            { AttributeName: g.partitionKey, KeyType: 'HASH' },
            { AttributeName: g.sortKey, KeyType: 'RANGE' },
          ],
          Projection: { ProjectionType: 'ALL' },
        })),
      },
    });
  });
});

describe('seal key', () => {
  it('is a generated, retained secret', () => {
    expect(resources[secretId()]).toMatchObject({
      Type: 'AWS::SecretsManager::Secret',
      DeletionPolicy: 'Retain',
      Properties: { GenerateSecretString: { PasswordLength: 64, ExcludePunctuation: true } },
    });
  });
});

describe('queues', () => {
  it.each(queues.map((q) => [q.name, q] as const))(
    '%s has its DLQ, redrive and visibility timeout',
    (name, def) => {
      // Arrange
      const queue = resources[queueId(name)];
      const dlqId = refOfOutput(`${pascal(name)}DeadLetterQueueUrl`);
      // Assert
      expect(queue.Properties).toMatchObject({
        VisibilityTimeout: def.visibilityTimeoutSeconds,
        RedrivePolicy: {
          deadLetterTargetArn: { 'Fn::GetAtt': [dlqId, 'Arn'] },
          maxReceiveCount: def.maxReceiveCount,
        },
      });
      expect(resources[dlqId].Properties).toMatchObject({ MessageRetentionPeriod: 14 * 24 * 3600 });
      expect(resources[dlqId].Properties.RedrivePolicy).toBeUndefined();
    },
  );

  it('enforces TLS on every queue and DLQ', () => {
    const queueIds = ofType('AWS::SQS::Queue').map(([id]) => id);
    expect(queueIds).toHaveLength(queues.length * 2);
    for (const id of queueIds) {
      template.hasResourceProperties('AWS::SQS::QueuePolicy', {
        Queues: [{ Ref: id }],
        PolicyDocument: {
          Statement: Match.arrayWith([
            Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          ]),
        },
      });
    }
  });

  it.each(queues.map((q) => [q.name, q] as const))(
    '%s is consumed with partial batch failures',
    (name, def) => {
      // Arrange
      const consumer = functionFor(def.consumer);
      // Assert
      const [mapping] = ofType('AWS::Lambda::EventSourceMapping').filter(
        ([, m]) =>
          JSON.stringify(m.Properties.EventSourceArn) ===
          JSON.stringify({ 'Fn::GetAtt': [queueId(name), 'Arn'] }),
      );
      expect(invokedFunction(mapping[1].Properties.FunctionName)).toBe(consumer);
      expect(mapping[1].Properties).toMatchObject({
        BatchSize: def.batchSize,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        MaximumBatchingWindowInSeconds: expect.any(Number),
      });
      expect(resources[consumer].Properties.Timeout).toBe(def.timeoutSeconds);
      expect(def.visibilityTimeoutSeconds).toBeGreaterThanOrEqual(6 * def.timeoutSeconds);
      const own = actionsOn(statementsOf(consumer), queueId(name));
      for (const action of ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes']) {
        expect(own, action).toContain(action);
      }
    },
  );

  it('has exactly one event source mapping per queue', () => {
    template.resourceCountIs('AWS::Lambda::EventSourceMapping', queues.length);
  });
});

describe('schedule', () => {
  it(`runs ${schedule.handler} every minute`, () => {
    const runner = functionFor(schedule.handler);
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      State: 'ENABLED',
      Targets: [Match.objectLike({ Arn: { 'Fn::GetAtt': [runner, 'Arn'] } })],
    });
    expect(resources[runner].Properties.Timeout).toBe(schedule.timeoutSeconds);
    template.hasResourceProperties('AWS::Lambda::Permission', {
      FunctionName: { 'Fn::GetAtt': [runner, 'Arn'] },
      Principal: 'events.amazonaws.com',
    });
  });
});

describe('grants', () => {
  // What each function is granted: infra/grants.test.ts.
  it('stays well below the 500 resources CloudFormation allows in a stack', () => {
    const count = Object.keys(resources).length;
    expect(count).toBeLessThan(450);
  });

  it("never grants a wildcard action, nor any resource '*' but X-Ray's", () => {
    // Policies, and the roles' inline ones (where the functions' roles hold their whole access).
    const documents = [
      ...ofType('AWS::IAM::Policy').map(([, p]) => p.Properties.PolicyDocument),
      ...ofType('AWS::IAM::Role').flatMap(([, r]) =>
        ((r.Properties.Policies ?? []) as { PolicyDocument: unknown }[]).map((p) => p.PolicyDocument),
      ),
    ] as { Statement: Statement[] }[];
    expect(documents.length).toBeGreaterThan(0);
    for (const document of documents) {
      for (const s of document.Statement) {
        expect(allActions([s]).has('*')).toBe(false);
        // X-Ray trace writes have no resource-level permissions (acknowledged in infra/nag.ts).
        if (s.Resource === '*') expect([...allActions([s])].sort()).toEqual(XRAY_ACTIONS);
      }
    }
  });
});

describe('functions', () => {
  it('runs every function on nodejs24.x / arm64 with its own log group', () => {
    const fns = ofType('AWS::Lambda::Function');
    expect(fns).toHaveLength(functionSpecs().length);
    for (const [id, fn] of fns) {
      expect(fn.Properties, id).toMatchObject({
        Runtime: 'nodejs24.x',
        Architectures: ['arm64'],
        Handler: 'index.handler',
        LoggingConfig: { LogGroup: { Ref: expect.any(String) } },
      });
      const logGroup = resources[(fn.Properties.LoggingConfig as { LogGroup: { Ref: string } }).LogGroup.Ref];
      expect(logGroup.Properties.RetentionInDays, id).toBe(30);
    }
  });

  it('gives every function the configuration environment', () => {
    // Arrange
    const version = (
      JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }
    ).version;
    // Assert
    for (const [id, fn] of ofType('AWS::Lambda::Function')) {
      const env = (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      expect(env, id).toMatchObject({
        TABLE_NAME: { Ref: tableId() },
        ALARM_QUEUE_URL: { Ref: queueId('alarm') },
        WEBHOOK_QUEUE_URL: { Ref: queueId('webhook') },
        NOTIFY_QUEUE_URL: { Ref: queueId('notify') },
        SEAL_KEY_SECRET_ARN: { Ref: secretId() },
        SERVICE_VERSION: version,
        ENV_NAME: 'test',
        LEGACY_SIGN: '1',
        REPORT_TIME_ZONE: 'UTC',
        BLOCK_PRIVATE_WEBHOOKS: '1',
        NODE_OPTIONS: '--enable-source-maps',
        POWERTOOLS_SERVICE_NAME: 'tocsin',
        POWERTOOLS_METRICS_NAMESPACE: 'Tocsin',
      });
      expect(env.SEAL_KEY, id).toBeUndefined();
    }
  });

  it('passes deployment settings through to the environment', { timeout: SYNTH_TIMEOUT_MS }, () => {
    // Act
    const other = synth({
      envName: 'staging',
      legacySign: false,
      reportTimeZone: 'Asia/Shanghai',
      tuning: { ALARM_RATE_LIMIT: '100' },
    });
    // Assert
    const fns = other.findResources('AWS::Lambda::Function');
    expect(Object.keys(fns)).toHaveLength(functionSpecs().length);
    for (const fn of Object.values(fns)) {
      expect(fn.Properties.Environment.Variables).toMatchObject({
        ENV_NAME: 'staging',
        LEGACY_SIGN: '0',
        REPORT_TIME_ZONE: 'Asia/Shanghai',
        ALARM_RATE_LIMIT: '100',
      });
    }
  });

  it('refuses unknown tuning or notification variables', () => {
    expect(() => synth({ tuning: { ALARM_RATE_LIMT: '1' } })).toThrow(/ALARM_RATE_LIMT/);
    expect(() => synth({ notifyEnvironment: { EMAIL_FORM: 'a@b.c' } })).toThrow(/EMAIL_FORM/);
  });
});

describe('notification providers', () => {
  const notifyConsumer = () => queues.find((q) => q.name === 'notify')!.consumer;
  const notifySpec = () => functionSpecs().find((s) => s.entry === notifyConsumer())!;

  function providerView(t: Template, spec: FunctionSpec) {
    const json = t.toJSON() as { Resources: Record<string, Resource> };
    const saved = resources;
    resources = json.Resources;
    try {
      const id = functionOf(spec);
      const statements = statementsOf(id);
      const env = (resources[id].Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      return { statements, actions: allActions(statements), env };
    } finally {
      resources = saved;
    }
  }

  it('gives provider settings and permissions to the notification consumer only', {
    timeout: SYNTH_TIMEOUT_MS,
  }, () => {
    // Arrange
    const t = synth({
      notifyEnvironment: {
        EMAIL_PROVIDER: 'ses',
        EMAIL_FROM: 'alarm@example.com',
        VOICE_ORIGINATION_IDENTITY: '+8613800000000',
        WECHAT_CORP_ID: 'wx-corp',
      },
    });
    // Act
    const notify = providerView(t, notifySpec());
    const others = functionSpecs()
      .filter((s) => s.entry !== notifyConsumer())
      .map((s) => providerView(t, s));
    // Assert
    expect(notify.env).toMatchObject({ EMAIL_PROVIDER: 'ses', EMAIL_FROM: 'alarm@example.com' });
    for (const a of ['ses:SendEmail', 'sns:Publish', 'sms-voice:SendVoiceMessage'])
      expect(notify.actions).toContain(a);
    const sns = notify.statements.find((s) => s.Action === 'sns:Publish') as Statement & {
      NotResource?: unknown;
    };
    expect(sns.Resource).toBeUndefined();
    expect(JSON.stringify(sns.NotResource)).toContain(':sns:*:*:*');
    for (const other of others) {
      expect(other.env.WECHAT_CORP_ID).toBeUndefined();
      expect([...other.actions].filter((a) => /^(ses|sns|sms-voice):/.test(a))).toEqual([]);
    }
  });

  it('grants only what the configured providers need', { timeout: SYNTH_TIMEOUT_MS }, () => {
    // Act
    const defaults = providerView(template, notifySpec());
    const off = providerView(
      synth({
        notifyEnvironment: { SMS_PROVIDER: 'none', SMTP_HOST: 'smtp.example.com', EMAIL_FROM: 'a@b.c' },
      }),
      notifySpec(),
    );
    // Assert: SMS via SNS is on by default in AWS; SES and voice need explicit settings.
    expect(defaults.actions).toContain('sns:Publish');
    expect(defaults.actions).not.toContain('ses:SendEmail');
    expect(defaults.actions).not.toContain('sms-voice:SendVoiceMessage');
    expect([...off.actions].filter((a) => /^(ses|sns|sms-voice):/.test(a))).toEqual([]);
  });
});

describe('notification provider credentials', () => {
  const notifyConsumer = () => functionFor(queues.find((q) => q.name === 'notify')!.consumer);
  const notifySecretId = () => refOfOutput('NotifySecretArn');

  it('are a retained secret created without a value (CloudFormation never writes one)', () => {
    // Arrange
    const secret = resources[notifySecretId()];
    // Assert
    expect(secret).toMatchObject({
      Type: 'AWS::SecretsManager::Secret',
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
    });
    expect(secret.Properties.GenerateSecretString).toBeUndefined();
    expect(secret.Properties.SecretString).toBeUndefined();
    for (const k of NOTIFY_SECRET_VARIABLES) expect(String(secret.Properties.Description)).toContain(k);
    expect([...NOTIFY_SECRET_VARIABLES].sort()).toEqual([...NOTIFY_SECRET_NAMES].sort());
  });

  it('are readable by the notification consumer only, which alone gets NOTIFY_SECRETS_ARN', () => {
    for (const spec of functionSpecs()) {
      // Arrange
      const id = functionOf(spec);
      const isNotify = id === notifyConsumer();
      // Act
      const onSecret = actionsOn(statementsOf(id), notifySecretId());
      const env = (resources[id].Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      // Assert
      expect(onSecret.has('secretsmanager:GetSecretValue'), labelOf(spec)).toBe(isNotify);
      expect(env.NOTIFY_SECRETS_ARN, labelOf(spec)).toEqual(isNotify ? { Ref: notifySecretId() } : undefined);
      for (const k of NOTIFY_SECRET_VARIABLES) expect(env[k], `${labelOf(spec)} ${k}`).toBeUndefined();
    }
  });

  it.each(NOTIFY_SECRET_VARIABLES.map((k) => [k]))('refuses %s in the notification settings', (name) => {
    expect(() => synth({ notifyEnvironment: { EMAIL_FROM: 'a@b.c', [name]: 'hunter2' } })).toThrow(
      new RegExp(`${name} is a credential and must not be in -c notify.*NotifySecretArn`),
    );
  });
});

describe('tracing and Powertools', () => {
  it('traces every function actively with X-Ray, which may write its segments', () => {
    const fns = ofType('AWS::Lambda::Function');
    expect(fns).toHaveLength(functionSpecs().length);
    for (const [id, fn] of fns) {
      expect(fn.Properties.TracingConfig, id).toEqual({ Mode: 'Active' });
      for (const action of XRAY_ACTIONS) expect(allActions(statementsOf(id)), id).toContain(action);
    }
  });

  it('announces the namespace and service of infra/metrics.ts to Powertools', () => {
    expect(METRICS).toMatchObject({ namespace: 'Tocsin', service: 'tocsin' });
    for (const [id, fn] of ofType('AWS::Lambda::Function')) {
      const env = (fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      expect(env.POWERTOOLS_METRICS_NAMESPACE, id).toBe(METRICS.namespace);
      expect(env.POWERTOOLS_SERVICE_NAME, id).toBe(METRICS.service);
    }
  });
});

describe('HTTP API stage', () => {
  function stageOf(res: Record<string, Resource>): [string, Resource] {
    const stages = Object.entries(res).filter(([, r]) => r.Type === 'AWS::ApiGatewayV2::Stage');
    expect(stages).toHaveLength(1);
    return stages[0];
  }
  const stage = () => stageOf(resources)[1].Properties;
  const ingestRouteKeys = () =>
    deployedRoutes()
      .filter((r) => r.auth === 'alarm')
      .map((r) => `${r.method} ${r.path}`);

  it('is the auto-deployed $default stage, every route throttled by default', () => {
    expect(stage()).toMatchObject({
      StageName: '$default',
      AutoDeploy: true,
      DefaultRouteSettings: {
        ThrottlingRateLimit: DEFAULT_API_THROTTLE.rateLimit,
        ThrottlingBurstLimit: DEFAULT_API_THROTTLE.burstLimit,
      },
    });
  });

  it('throttles each ingestion route tighter, and only those', () => {
    // Arrange
    const ingest = ingestRouteKeys();
    const settings = stage().RouteSettings as Record<string, unknown>;
    // Assert
    expect(ingest).toContain('POST /alarm/report');
    expect(ingest.every((k) => / \/alarm\//.test(k))).toBe(true);
    expect(Object.keys(settings).sort()).toEqual([...ingest].sort());
    for (const key of ingest) {
      expect(settings[key], key).toEqual({
        ThrottlingRateLimit: DEFAULT_INGEST_THROTTLE.rateLimit,
        ThrottlingBurstLimit: DEFAULT_INGEST_THROTTLE.burstLimit,
      });
    }
    expect(DEFAULT_INGEST_THROTTLE.rateLimit).toBeLessThan(DEFAULT_API_THROTTLE.rateLimit);
  });

  it('is created after the routes its settings name (API Gateway refuses unknown route keys)', () => {
    const dependsOn = (stageOf(resources)[1] as Resource & { DependsOn?: string[] }).DependsOn ?? [];
    const routeIds = ofType('AWS::ApiGatewayV2::Route')
      .filter(([, r]) => ingestRouteKeys().includes(String(r.Properties.RouteKey)))
      .map(([id]) => id);
    expect(routeIds).toHaveLength(ingestRouteKeys().length);
    for (const id of routeIds) expect(dependsOn).toContain(id);
  });

  it('takes its throttling from the stack props', { timeout: SYNTH_TIMEOUT_MS }, () => {
    // Act
    const json = synth({
      apiThrottle: { rateLimit: 50, burstLimit: 100 },
      ingestThrottle: { rateLimit: 5, burstLimit: 10 },
    }).toJSON() as { Resources: Record<string, Resource> };
    const props = stageOf(json.Resources)[1].Properties;
    // Assert
    expect(props.DefaultRouteSettings).toEqual({ ThrottlingRateLimit: 50, ThrottlingBurstLimit: 100 });
    expect((props.RouteSettings as Record<string, unknown>)['POST /alarm/report']).toEqual({
      ThrottlingRateLimit: 5,
      ThrottlingBurstLimit: 10,
    });
    expect(() => synth({ apiThrottle: { rateLimit: 0, burstLimit: 10 } })).toThrow(/positive/);
  });

  it('writes access logs to its own log group, kept for the log retention', () => {
    const destination = (stage().AccessLogSettings as { DestinationArn: { 'Fn::GetAtt': [string, string] } })
      .DestinationArn;
    const logGroupId = destination['Fn::GetAtt'][0];
    expect(resources[logGroupId]).toMatchObject({
      Type: 'AWS::Logs::LogGroup',
      DeletionPolicy: 'Retain',
      Properties: { RetentionInDays: 30 },
    });
    expect(outputs.ApiAccessLogGroup.Value).toEqual({ Ref: logGroupId });
  });

  it('logs request metadata as JSON, never the query string or the body', () => {
    // Arrange
    const format = (stage().AccessLogSettings as { Format: string }).Format;
    const variables = format.match(/\$[A-Za-z][\w.]*/g) ?? [];
    // Assert: the fields the runbook relies on
    expect(JSON.parse(format)).toMatchObject({
      requestId: '$context.requestId',
      ip: '$context.identity.sourceIp',
      method: '$context.httpMethod',
      routeKey: '$context.routeKey',
      path: '$context.path',
      status: '$context.status',
      protocol: '$context.protocol',
      responseLength: '$context.responseLength',
      integrationLatency: '$context.integrationLatency',
    });
    expect(JSON.parse(format)).toEqual(ACCESS_LOG_FORMAT);
    // Assert: only $context variables of an allow-list: no $request.querystring, $input, body,
    // request override or integration error message (which may quote a body).
    expect(variables.length).toBe(Object.keys(ACCESS_LOG_FORMAT).length);
    for (const v of variables) expect(ALLOWED_ACCESS_LOG_VARIABLES, v).toContain(v);
    expect(format).not.toMatch(/query|body|\$request|\$input|requestOverride|\$method|errorMessage/i);
  });
});

/** $context variables that carry no part of the query string, headers (but the user agent) or body. */
const ALLOWED_ACCESS_LOG_VARIABLES = [
  '$context.requestId',
  '$context.extendedRequestId',
  '$context.requestTime',
  '$context.requestTimeEpoch',
  '$context.identity.sourceIp',
  '$context.identity.userAgent',
  '$context.httpMethod',
  '$context.routeKey',
  '$context.path',
  '$context.protocol',
  '$context.status',
  '$context.responseLength',
  '$context.responseLatency',
  '$context.integrationLatency',
  '$context.integration.status',
  '$context.error.message',
];

describe('alarms', () => {
  type AlarmProps = {
    MetricName: string;
    Namespace: string;
    Dimensions: { Name: string; Value: unknown }[];
    Threshold: number;
    ComparisonOperator: string;
    EvaluationPeriods: number;
    DatapointsToAlarm?: number;
    Period: number;
    Statistic: string;
    AlarmActions: unknown[];
    OKActions: unknown[];
    TreatMissingData: string;
  };
  const alarms = () =>
    ofType('AWS::CloudWatch::Alarm').map(([id, a]) => ({ id, ...(a.Properties as AlarmProps) }));
  const topicId = () => refOfOutput('AlarmTopicArn');
  /** The alarms on a metric whose (first) dimension is `value`. */
  const on = (namespace: string, metricName: string, value: unknown) =>
    alarms().filter(
      (a) =>
        a.Namespace === namespace &&
        a.MetricName === metricName &&
        JSON.stringify(a.Dimensions[0]?.Value) === JSON.stringify(value),
    );

  it('notify the stack topic on ALARM and on OK, every one of them', () => {
    expect(resources[topicId()].Type).toBe('AWS::SNS::Topic');
    for (const a of alarms()) {
      expect(a.AlarmActions, a.id).toEqual([{ Ref: topicId() }]);
      expect(a.OKActions, a.id).toEqual([{ Ref: topicId() }]);
      // The one alarm on something that stops: the schedule (its runs missing is the trouble).
      const stopped = a.MetricName === 'Invocations';
      expect(a.ComparisonOperator, a.id).toBe(
        stopped ? 'LessThanThreshold' : 'GreaterThanOrEqualToThreshold',
      );
      expect(a.TreatMissingData, a.id).toBe(stopped ? 'breaching' : 'notBreaching');
    }
  });

  it.each(queues.map((q) => [q.name]))('fire on the first message in the %s dead-letter queue', (name) => {
    const dlq = refOfOutput(`${pascal(name as QueueName)}DeadLetterQueueUrl`);
    const found = on('AWS/SQS', 'ApproximateNumberOfMessagesVisible', { 'Fn::GetAtt': [dlq, 'QueueName'] });
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ Threshold: 1, Statistic: 'Maximum', EvaluationPeriods: 1 });
  });

  it('fire on any error or throttle of every function (HTTP routes ten to an alarm, the others alone)', () => {
    const fns = ofType('AWS::Lambda::Function').map(([id]) => id);
    expect(fns).toHaveLength(functionSpecs().length);
    type MathAlarm = {
      Metrics?: {
        Id: string;
        Expression?: string;
        MetricStat?: { Metric: { MetricName: string; Dimensions: { Value: unknown }[] }; Stat: string };
      }[];
    };
    const inMath = (metric: string, id: string) =>
      alarms().filter((a) =>
        ((a as unknown as MathAlarm).Metrics ?? []).some(
          (m) =>
            m.MetricStat?.Metric.MetricName === metric &&
            m.MetricStat.Stat === 'Sum' &&
            JSON.stringify(m.MetricStat.Metric.Dimensions[0]?.Value) === JSON.stringify({ Ref: id }),
        ),
      );
    for (const id of fns) {
      for (const metric of ['Errors', 'Throttles']) {
        const direct = on('AWS/Lambda', metric, { Ref: id });
        const grouped = inMath(metric, id);
        expect(direct.length + grouped.length, `${id} ${metric}`).toBe(1);
        const a = direct[0] ?? grouped[0];
        expect(a, `${id} ${metric}`).toMatchObject({ Threshold: 1, EvaluationPeriods: 1 });
        if (direct[0]) expect(direct[0].Statistic).toBe('Sum');
        else {
          const math = (a as unknown as MathAlarm).Metrics ?? [];
          expect(math.length).toBeLessThanOrEqual(11);
          expect(math.find((m) => m.Expression)?.Expression).toMatch(/^SUM\(\[m\d+(,m\d+)*\]\)$/);
        }
      }
    }
    // The ingestion route and the queue and schedule functions are never grouped.
    for (const id of [
      functionOfRoute('POST /alarm/report'),
      ...[...queues.map((q) => q.consumer), schedule.handler].map(functionFor),
    ]) {
      expect(on('AWS/Lambda', 'Errors', { Ref: id }), id).toHaveLength(1);
    }
  });

  it('fire when alarms wait 60 s or more in the alarm queue for 5 minutes', () => {
    const found = on('AWS/SQS', 'ApproximateAgeOfOldestMessage', {
      'Fn::GetAtt': [queueId('alarm'), 'QueueName'],
    });
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({
      Threshold: 60,
      Period: 60,
      EvaluationPeriods: 5,
      DatapointsToAlarm: 5,
      Statistic: 'Maximum',
    });
  });

  it('fire on 5xx answers of the HTTP API', () => {
    const [[apiId]] = ofType('AWS::ApiGatewayV2::Api');
    const found = on('AWS/ApiGateway', '5xx', { Ref: apiId });
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ Threshold: 5, Statistic: 'Sum', Period: 300 });
  });

  it('are exactly those, and the ones of infra/ops.test.ts', () => {
    // Grouped: the routes that do not take alarms, and $default; alone: alarm intake, queues, schedule.
    const app = deployedRoutes().filter((r) => r.auth !== 'alarm').length + 1;
    const alone = ofType('AWS::Lambda::Function').length - app;
    // DLQs and queue ages; errors and throttles; API 5xx; table throttles and errors; AlarmLogLost,
    // DueWorkBuried; the schedule.
    expect(alarms()).toHaveLength(2 * queues.length + 2 * (alone + Math.ceil(app / 10)) + 1 + 2 + 2 + 1);
  });
});

describe('alarm topic', () => {
  const topicId = () => refOfOutput('AlarmTopicArn');

  it('refuses plain HTTP and lets only this account’s CloudWatch alarms publish', () => {
    template.hasResourceProperties('AWS::SNS::TopicPolicy', {
      Topics: [{ Ref: topicId() }],
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
          Match.objectLike({
            Effect: 'Allow',
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Action: 'sns:Publish',
            Condition: Match.objectLike({ StringEquals: { 'aws:SourceAccount': '123456789012' } }),
          }),
        ]),
      },
    });
  });

  it('has an e-mail subscription only when alarmEmail is given', { timeout: SYNTH_TIMEOUT_MS }, () => {
    // Arrange / Act
    const withEmail = synth({ alarmEmail: 'ops@example.com' });
    // Assert
    template.resourceCountIs('AWS::SNS::Subscription', 0);
    withEmail.resourceCountIs('AWS::SNS::Subscription', 1);
    withEmail.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'ops@example.com',
    });
    expect(() => synth({ alarmEmail: 'not an address' })).toThrow(/alarmEmail/);
  });
});

describe('dashboard', () => {
  it('graphs the API, ingestion, deliveries, queues, functions and the table', () => {
    // Arrange
    const dashboards = ofType('AWS::CloudWatch::Dashboard');
    expect(dashboards).toHaveLength(1);
    const body = JSON.stringify(dashboards[0][1].Properties.DashboardBody);
    // Assert: sections
    for (const title of [
      'API requests',
      'API latency',
      'API 4xx / 5xx',
      'Alarms refused by code',
      'Pipeline outcome',
      'Webhook deliveries by outcome',
      'Webhook latency',
      'Channel deliveries',
      'Queue depth',
      'Oldest message age',
      'Dead-letter queue depth',
      'Lambda errors',
      'Lambda throttles',
      'Lambda duration',
      'DynamoDB consumed capacity',
      'DynamoDB throttle events',
    ]) {
      expect(body.toLowerCase(), title).toContain(title.toLowerCase());
    }
    // Assert: the custom metrics of infra/metrics.ts, every function, queue and DLQ, and the table
    for (const key of [
      'alarmsAccepted',
      'alarmsRefused',
      'pipelineOutcome',
      'webhookDelivery',
      'webhookLatency',
      'channelDelivery',
    ] as const) {
      expect(body, key).toContain(
        `Namespace=\\\\\\"Tocsin\\\\\\" MetricName=\\\\\\"${METRICS[key].name}\\\\\\"`,
      );
    }
    for (const [id] of ofType('AWS::Lambda::Function')) expect(body, id).toContain(`"Ref":"${id}"`);
    for (const q of queues) {
      expect(body).toContain(`"${queueId(q.name)}","QueueName"`);
      expect(body).toContain(`"${refOfOutput(`${pascal(q.name)}DeadLetterQueueUrl`)}","QueueName"`);
    }
    expect(body).toContain(`"Ref":"${tableId()}"`);
    expect(outputs.DashboardName.Value).toEqual({ Ref: dashboards[0][0] });
  });
});

describe('cdk-nag AwsSolutions', () => {
  it.each([
    ['the default settings', {}],
    [
      'SES, voice and an alarm e-mail',
      {
        alarmEmail: 'ops@example.com',
        notifyEnvironment: {
          EMAIL_PROVIDER: 'ses',
          EMAIL_FROM: 'alarm@example.com',
          VOICE_ORIGINATION_IDENTITY: '+8613800000000',
        },
      },
    ],
  ] as [string, StackProps][])(
    'finds nothing unacknowledged with %s',
    { timeout: SYNTH_TIMEOUT_MS },
    (_, props) => {
      // Arrange
      const { stack } = synthStack(props);
      // Act
      const report = new AwsSolutionsChecks().validateScope(stack);
      // Assert
      const findings = report.violations.map(
        (v) => `${v.ruleName}: ${v.violatingResources.map((r) => r.constructPath).join(', ')}`,
      );
      expect(findings).toEqual([]);
      expect(report.success).toBe(true);
    },
  );

  it('acknowledges AwsSolutions rules only, each with its reason', { timeout: SYNTH_TIMEOUT_MS }, () => {
    // Arrange
    const { stack } = synthStack();
    // Act
    const acknowledged = stack.node
      .findAll()
      .flatMap((c) => c.node.metadata.filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY))
      .flatMap((m) => Object.entries(m.data as Record<string, string>));
    // Assert
    expect(acknowledged.length).toBeGreaterThan(0);
    for (const [id, reason] of acknowledged) {
      expect(id).toMatch(/AwsSolutions-(IAM4|IAM5|APIG4|SMG4)\b/);
      expect(reason.length, id).toBeGreaterThan(80);
    }
  });
});

describe('outputs', () => {
  it('exports the API URL, table name, both secrets and every queue and DLQ URL', () => {
    const expected = [
      'ApiUrl',
      'TableName',
      'SealKeySecretArn',
      'NotifySecretArn',
      'AlarmTopicArn',
      'DashboardName',
      'ApiAccessLogGroup',
      ...queues.flatMap((q) => [`${pascal(q.name)}QueueUrl`, `${pascal(q.name)}DeadLetterQueueUrl`]),
    ];
    expect(Object.keys(outputs).sort()).toEqual(expected.sort());
    const [[apiId]] = ofType('AWS::ApiGatewayV2::Api');
    expect(outputs.ApiUrl.Value).toEqual({ 'Fn::GetAtt': [apiId, 'ApiEndpoint'] });
  });
});

describe('handler files', () => {
  it('exist for every route, queue consumer and the schedule', () => {
    const entries = [
      ...deployedRoutes().map((r) => r.handler),
      NOT_FOUND_HANDLER,
      ...queues.map((q) => q.consumer),
      schedule.handler,
    ];
    const missing = entries.filter((e) => !existsSync(join(PROJECT_ROOT, e)));
    expect(missing).toEqual([]);
  });
});

describe('cdk.json', () => {
  it('sets every feature flag the installed aws-cdk-lib recommends, to its recommended value', () => {
    // A new aws-cdk-lib brings new flags: review them and copy the recommended values into cdk.json.
    for (const [flag, value] of Object.entries(CURRENTLY_RECOMMENDED_FLAGS)) {
      expect(CDK_CONTEXT[flag], flag).toEqual(value);
    }
  });
});
