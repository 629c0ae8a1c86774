import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { Match, Template } from 'aws-cdk-lib/assertions';
import { CURRENTLY_RECOMMENDED_FLAGS } from 'aws-cdk-lib/cx-api';
import { beforeAll, describe, expect, it } from 'vitest';
import { NOT_FOUND_HANDLER, deployedRoutes } from './constructs/http-api.ts';
import { NOTIFY_SECRET_VARIABLES } from './constructs/notify-providers.ts';
import { pascal } from './constructs/queues.ts';
import { NOTIFY_SECRET_NAMES } from '../shared/config/env.ts';
import { type QueueName, queues, routes, schedule, table } from './definitions.ts';
import { PROJECT_ROOT, TocsinStack } from './stack.ts';

type Resource = {
  Type: string;
  Properties: Record<string, unknown>;
  DeletionPolicy?: string;
  UpdateReplacePolicy?: string;
};
type Statement = { Effect: string; Action: string | string[]; Resource: unknown; Condition?: unknown };

const WRITE_ACTIONS = [
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
  'dynamodb:BatchWriteItem',
];
const READ_ACTIONS = ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:BatchGetItem'];

/** The context `cdk synth` runs with (feature flags), so that the tests see the deployed template. */
const CDK_CONTEXT = (
  JSON.parse(readFileSync(join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> }
).context;

function synth(props: Partial<ConstructorParameters<typeof TocsinStack>[2]> = {}): Template {
  const app = new App({ context: CDK_CONTEXT });
  const stack = new TocsinStack(app, 'Tocsin-test', {
    env: { account: '123456789012', region: 'eu-west-1' },
    envName: 'test',
    skipBundling: true,
    ...props,
  });
  return Template.fromStack(stack);
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
 * runs). Only for handlers that serve a single function: routes may share a handler file (GET and POST
 * /alarm/falcon), each route still on its own Lambda; those are found by route (functionOfRoute).
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
  const uri = resources[integrationId].Properties.IntegrationUri as { 'Fn::GetAtt': [string, string] };
  return uri['Fn::GetAtt'][0];
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
  return ofType('AWS::IAM::Policy')
    .filter(([, p]) => (p.Properties.Roles as { Ref: string }[]).some((r) => r.Ref === role))
    .flatMap(([, p]) => (p.Properties.PolicyDocument as { Statement: Statement[] }).Statement);
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
  table: 'read' | 'write' | 'none';
  publishes: QueueName[];
  sealed: boolean;
}

/** Every deployed function (one per route, `$default`, consumer and schedule) and what it may do. */
function functionSpecs(): FunctionSpec[] {
  return [
    ...deployedRoutes().map((r) => ({
      entry: r.handler,
      routeKey: `${r.method} ${r.path}`,
      table: r.table,
      publishes: r.publishes ?? [],
      sealed: r.auth !== 'none',
    })),
    { entry: NOT_FOUND_HANDLER, routeKey: '$default', table: 'none', publishes: [], sealed: false },
    ...queues.map((q) => ({
      entry: q.consumer,
      table: 'write' as const,
      publishes: q.publishes,
      sealed: true,
    })),
    { entry: schedule.handler, table: 'write', publishes: schedule.publishes, sealed: true },
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
  it('has one route per deployed route plus $default, each on its own Lambda', () => {
    // Arrange
    const expected = deployedRoutes().map((r) => [`${r.method} ${r.path}`, r.handler]);
    expected.push(['$default', NOT_FOUND_HANDLER]);
    // Act
    const actual = ofType('AWS::ApiGatewayV2::Route').map(([, route]) => {
      const target = JSON.stringify(route.Properties.Target);
      const integrationId = /"Ref":"([^"]+)"/.exec(target)![1];
      const uri = resources[integrationId].Properties.IntegrationUri as { 'Fn::GetAtt': [string, string] };
      const description = resources[uri['Fn::GetAtt'][0]].Properties.Description as string;
      return [route.Properties.RouteKey, description.replace(/^tocsin /, '')];
    });
    const lambdas = actual.map(([routeKey]) => functionOfRoute(String(routeKey)));
    // Assert
    expect(actual.sort()).toEqual(expected.sort());
    expect(new Set(lambdas).size).toBe(actual.length);
  });

  it('gives routes that share a handler file the same access', () => {
    const byHandler = new Map<string, string[]>();
    for (const r of deployedRoutes()) {
      const access = JSON.stringify([r.auth, r.table, [...(r.publishes ?? [])].sort()]);
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
      template.hasResourceProperties('AWS::Lambda::EventSourceMapping', {
        EventSourceArn: { 'Fn::GetAtt': [queueId(name), 'Arn'] },
        FunctionName: { Ref: consumer },
        BatchSize: def.batchSize,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
        MaximumBatchingWindowInSeconds: Match.anyValue(),
      });
      expect(resources[consumer].Properties.Timeout).toBe(def.timeoutSeconds);
      expect(def.visibilityTimeoutSeconds).toBeGreaterThanOrEqual(6 * def.timeoutSeconds);
      const own = actionsOn(statementsOf(consumer), queueId(name));
      for (const action of ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:ChangeMessageVisibility']) {
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
  it('gives a read-only route read access to the table and no write action', () => {
    // Arrange
    const route = deployedRoutes().find((r) => r.method === 'GET' && r.path === '/alarmtask/show')!;
    expect(route.table).toBe('read');
    // Act
    const onTable = actionsOn(statementsOf(functionFor(route.handler)), tableId());
    // Assert
    for (const a of READ_ACTIONS) expect(onTable).toContain(a);
    for (const a of WRITE_ACTIONS) expect(onTable).not.toContain(a);
  });

  it('gives a write route the write actions', () => {
    const route = deployedRoutes().find((r) => r.method === 'PUT' && r.path === '/alarmtask/update')!;
    expect(route.table).toBe('write');
    const onTable = actionsOn(statementsOf(functionFor(route.handler)), tableId());
    for (const a of [...READ_ACTIONS, ...WRITE_ACTIONS]) expect(onTable).toContain(a);
  });

  it('matches every function table access to its definition', () => {
    for (const spec of functionSpecs()) {
      const onTable = actionsOn(statementsOf(functionOf(spec)), tableId());
      expect(onTable.has('dynamodb:GetItem'), labelOf(spec)).toBe(spec.table !== 'none');
      expect(onTable.has('dynamodb:PutItem'), labelOf(spec)).toBe(spec.table === 'write');
    }
  });

  it('lets only the publishers of a queue send to it', () => {
    for (const spec of functionSpecs()) {
      const statements = statementsOf(functionOf(spec));
      for (const q of queues) {
        const canSend = actionsOn(statements, queueId(q.name)).has('sqs:SendMessage');
        expect(canSend, `${labelOf(spec)} -> ${q.name}`).toBe(spec.publishes.includes(q.name));
      }
    }
  });

  it('grants the seal key to everything that authenticates or consumes, and nothing else', () => {
    for (const spec of functionSpecs()) {
      const onSecret = actionsOn(statementsOf(functionOf(spec)), secretId());
      expect(onSecret.has('secretsmanager:GetSecretValue'), labelOf(spec)).toBe(spec.sealed);
    }
  });

  it('gives the health function no table, queue or secret access', () => {
    const health = functionFor(deployedRoutes().find((r) => r.path === '/health')!.handler);
    const actions = [...allActions(statementsOf(health))];
    expect(actions.filter((a) => /^(dynamodb|sqs|secretsmanager):/.test(a))).toEqual([]);
  });

  it('never grants a wildcard action or resource', () => {
    for (const [, policy] of ofType('AWS::IAM::Policy')) {
      for (const s of (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement) {
        expect(allActions([s]).has('*')).toBe(false);
        expect(s.Resource).not.toBe('*');
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

  it('are a retained secret created with the four keys empty', () => {
    // Arrange
    const secret = resources[notifySecretId()];
    // Assert
    expect(secret).toMatchObject({
      Type: 'AWS::SecretsManager::Secret',
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
    });
    expect(secret.Properties.GenerateSecretString).toBeUndefined();
    const value = JSON.parse(String(secret.Properties.SecretString)) as Record<string, string>;
    expect(value).toEqual(Object.fromEntries(NOTIFY_SECRET_VARIABLES.map((k) => [k, ''])));
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

describe('outputs', () => {
  it('exports the API URL, table name, both secrets and every queue and DLQ URL', () => {
    const expected = [
      'ApiUrl',
      'TableName',
      'SealKeySecretArn',
      'NotifySecretArn',
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
