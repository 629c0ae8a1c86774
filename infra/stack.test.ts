import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Validations } from 'aws-cdk-lib';
import { Match } from 'aws-cdk-lib/assertions';
import { CURRENTLY_RECOMMENDED_FLAGS } from 'aws-cdk-lib/cx-api';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import { NOT_FOUND_HANDLER, deployedRoutes } from './constructs/http-api.ts';
import { pascal } from './constructs/queues.ts';
import { table } from '../shared/contracts/table.ts';
import { queues, schedule } from './consumers.ts';
import { PROJECT_ROOT } from './stack.ts';
import {
  actionsOn,
  CDK_CONTEXT,
  functionFor,
  invokedFunction,
  ofType,
  outputs,
  queueId,
  refOfOutput,
  resources,
  secretId,
  type StackProps,
  statementsOf,
  SYNTH_TIMEOUT_MS,
  synthOnce,
  synthStack,
  template,
} from './test-stack.ts';

beforeAll(synthOnce, SYNTH_TIMEOUT_MS);

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
        MessageRetentionPeriod: def.retentionDays * 24 * 3600,
        RedrivePolicy: {
          deadLetterTargetArn: { 'Fn::GetAtt': [dlqId, 'Arn'] },
          maxReceiveCount: def.maxReceiveCount,
        },
      });
      expect(resources[dlqId].Properties).toMatchObject({ MessageRetentionPeriod: 14 * 24 * 3600 });
      expect(resources[dlqId].Properties.RedrivePolicy).toBeUndefined();
    },
  );

  it('keeps accepted alarms 14 days, the longest SQS allows', () => {
    expect(resources[queueId('alarm')].Properties.MessageRetentionPeriod).toBe(1_209_600);
  });

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
      });
      // A batching window only where a fuller batch shares writes: the alarm queue.
      expect(mapping[1].Properties.MaximumBatchingWindowInSeconds).toBe(def.gather ? 1 : undefined);
      expect(def.gather).toBe(name === 'alarm');
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
  it(`runs ${schedule.handler} every minute, through its live alias`, () => {
    const runner = functionFor(schedule.handler);
    const [[alias]] = ofType('AWS::Lambda::Alias').filter(
      ([, a]) => JSON.stringify(a.Properties.FunctionName) === JSON.stringify({ Ref: runner }),
    );
    template.hasResourceProperties('AWS::Events::Rule', {
      ScheduleExpression: 'rate(1 minute)',
      State: 'ENABLED',
      Targets: [Match.objectLike({ Arn: { Ref: alias } })],
    });
    expect(resources[runner].Properties.Timeout).toBe(schedule.timeoutSeconds);
    template.hasResourceProperties('AWS::Lambda::Permission', {
      FunctionName: { Ref: alias },
      Principal: 'events.amazonaws.com',
    });
    // Neither EventBridge nor Lambda's asynchronous invocation retries a run: the next minute's does.
    const [[, invokeConfig]] = ofType('AWS::Lambda::EventInvokeConfig');
    expect(invokeConfig.Properties).toMatchObject({ FunctionName: { Ref: runner }, MaximumRetryAttempts: 0 });
    expect(JSON.stringify(invokeConfig.Properties.Qualifier)).toContain(`{"Ref":"${alias}"}`);
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
