import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { deployedRoutes } from './constructs/http-api.ts';
import { pascal } from './constructs/queues.ts';
import { queues } from './definitions.ts';
import { METRICS } from './metrics.ts';
import { PROJECT_ROOT } from './stack.ts';
import {
  actionsOn,
  allActions,
  functionFor,
  functionOf,
  functionSpecs,
  labelOf,
  ofType,
  queueId,
  READ_ACTIONS,
  refOfOutput,
  resources,
  secretId,
  type Statement,
  statementsOf,
  synth,
  SYNTH_TIMEOUT_MS,
  synthOnce,
  tableId,
  WRITE_ACTIONS,
  XRAY_ACTIONS,
} from './test-stack.ts';

beforeAll(synthOnce, SYNTH_TIMEOUT_MS);

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

  it('lets only the alarm consumer insert with PartiQL (its alarm records), on the table', () => {
    const alarmConsumer = functionFor(queues.find((q) => q.name === 'alarm')!.consumer);
    for (const spec of functionSpecs()) {
      const id = functionOf(spec);
      const onTable = actionsOn(statementsOf(id), tableId());
      expect(onTable.has('dynamodb:PartiQLInsert'), labelOf(spec)).toBe(id === alarmConsumer);
      expect(allActions(statementsOf(id)).has('dynamodb:PartiQLUpdate'), labelOf(spec)).toBe(false);
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

  it('lets only the dead-letter routes read the DLQs, and only the redrive delete from them', () => {
    const readers = functionSpecs().filter((spec) => spec.deadLetters);
    expect(readers.map((spec) => spec.routeKey).sort()).toEqual([
      'GET /delivery/dlq',
      'POST /delivery/dlq/redrive',
    ]);
    for (const spec of functionSpecs()) {
      const statements = statementsOf(functionOf(spec));
      for (const q of queues) {
        const dlq = refOfOutput(`${pascal(q.name)}DeadLetterQueueUrl`);
        const actions = actionsOn(statements, dlq);
        const label = `${labelOf(spec)} -> ${q.name} DLQ`;
        expect(actions.has('sqs:ReceiveMessage'), label).toBe(spec.deadLetters !== undefined);
        expect(actions.has('sqs:ChangeMessageVisibility'), label).toBe(spec.deadLetters !== undefined);
        expect(actions.has('sqs:DeleteMessage'), label).toBe(spec.deadLetters === 'redrive');
        expect(actions.has('sqs:SendMessage'), label).toBe(false);
      }
      const env = (
        resources[functionOf(spec)].Properties.Environment as { Variables: Record<string, unknown> }
      ).Variables;
      expect('WEBHOOK_DLQ_URL' in env, labelOf(spec)).toBe(spec.deadLetters !== undefined);
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

  it('shares an execution role only between functions granted exactly the same', () => {
    const byRole = new Map<string, string[]>();
    for (const [id, fn] of ofType('AWS::Lambda::Function')) {
      const role = (fn.Properties.Role as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
      byRole.set(role, [...(byRole.get(role) ?? []), id]);
    }
    const grants = (id: string) =>
      JSON.stringify(statementsOf(id).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))));
    const seen = new Map<string, string>();
    for (const [role, fns] of byRole) {
      for (const fn of fns) expect(grants(fn), fn).toBe(grants(fns[0]));
      // Two roles never hold the same grants: they would be one.
      expect(seen.get(grants(fns[0])), role).toBeUndefined();
      seen.set(grants(fns[0]), role);
    }
    expect(byRole.size).toBeLessThan(ofType('AWS::Lambda::Function').length);
  });

  it('lets only a queue’s consumer receive from it or delete from it (no role shared with a consumer)', () => {
    for (const q of queues) {
      const consumer = functionFor(q.consumer);
      for (const [id] of ofType('AWS::Lambda::Function')) {
        const actions = actionsOn(statementsOf(id), queueId(q.name));
        const consumes = actions.has('sqs:ReceiveMessage') || actions.has('sqs:DeleteMessage');
        expect(consumes, `${id} on the ${q.name} queue`).toBe(id === consumer);
      }
    }
  });

  it('stays well below the 500 resources CloudFormation allows in a stack', () => {
    const count = Object.keys(resources).length;
    expect(count).toBeLessThan(450);
  });

  it("never grants a wildcard action, nor any resource '*' but X-Ray's", () => {
    for (const [, policy] of ofType('AWS::IAM::Policy')) {
      for (const s of (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement) {
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
