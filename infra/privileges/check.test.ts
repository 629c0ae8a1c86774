import { describe, expect, it } from 'vitest';
import type { CallRecord } from '../../shared/local/call-record.ts';
import { checkLeastPrivilege, requestOf } from './check.ts';
import { conditionsHold, evaluate, globMatch, type Statement } from './policy.ts';
import type { TemplateView } from './template.ts';

const TABLE = 'arn:aws:dynamodb:eu-west-1:123456789012:table/DataTable';
const QUEUE = 'arn:aws:sqs:eu-west-1:123456789012:AlarmQueue';

/** A view of a stack with two functions: intake (`POST /alarm/report`) and a reader (`GET /x`). */
function stack(statements: Record<string, Statement[]>): TemplateView {
  const arns: Record<string, string> = {
    table: TABLE,
    'table/index/gsi1': `${TABLE}/index/gsi1`,
    'queue/alarm': QUEUE,
  };
  return {
    functions: new Map([
      ['POST /alarm/report', 'Intake'],
      ['GET /x', 'Reader'],
    ]),
    statementsOf: (fn) => statements[fn] ?? [],
    arnOf: (name) => arns[name] ?? name,
    roleOf: (fn) => `${fn}Role`,
  };
}

const leadingKeys = (...prefixes: string[]) => ({
  'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': prefixes.map((p) => `${p}*`) },
});

const INTAKE: Statement[] = [
  {
    Effect: 'Allow',
    Action: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
    Resource: TABLE,
    Condition: leadingKeys('TASK#'),
  },
  { Effect: 'Allow', Action: 'sqs:SendMessage', Resource: QUEUE },
];
const READER: Statement[] = [{ Effect: 'Allow', Action: 'dynamodb:Query', Resource: `${TABLE}/index/gsi1` }];

const call = (fn: string, action: string, resource: string, keys?: string[]): CallRecord => ({
  fn,
  op: action.split(':')[1],
  action,
  resource,
  ...(keys ? { keys } : {}),
});

const check = (records: CallRecord[], statements = { Intake: INTAKE, Reader: READER }) =>
  checkLeastPrivilege(records, stack(statements), { unused: true, exceptions: [] });

/** Calls that use every grant of both functions. */
const EVERY_GRANT = [
  call('POST /alarm/report', 'dynamodb:GetItem', 'table', ['TASK#']),
  call('POST /alarm/report', 'dynamodb:UpdateItem', 'table', ['TASK#']),
  call('POST /alarm/report', 'sqs:SendMessage', 'queue/alarm'),
  call('GET /x', 'dynamodb:Query', 'table/index/gsi1', ['USERPERM#']),
];

describe('the least-privilege check', () => {
  it('passes calls their role allows when every grant is used', () => {
    const report = check(EVERY_GRANT);
    expect(report.denied).toEqual([]);
    expect(report.unused).toEqual([]);
    expect(report).toMatchObject({ ok: true, functions: 2, reached: 2, calls: 4, grants: 4 });
  });

  it('denies an action the role does not grant', () => {
    const report = check([
      ...EVERY_GRANT,
      call('POST /alarm/report', 'dynamodb:DeleteItem', 'table', ['TASK#']),
    ]);
    expect(report.ok).toBe(false);
    expect(report.denied).toEqual([
      'POST /alarm/report: dynamodb:DeleteItem on table for keys TASK# is not allowed by its role (1x)',
    ]);
  });

  it('denies an allowed action on a key prefix outside its condition, also within a batch', () => {
    const report = check([
      ...EVERY_GRANT,
      call('POST /alarm/report', 'dynamodb:GetItem', 'table', ['APP#']),
      call('POST /alarm/report', 'dynamodb:UpdateItem', 'table', ['TASK#', 'TASKNAME#']),
    ]);
    expect(report.denied).toEqual([
      'POST /alarm/report: dynamodb:GetItem on table for keys APP# is not allowed by its role (1x)',
      'POST /alarm/report: dynamodb:UpdateItem on table for keys TASK#, TASKNAME# is not allowed by its role (1x)',
    ]);
  });

  it('denies an allowed action on another resource, and a call of a function the stack does not have', () => {
    const report = check([
      ...EVERY_GRANT,
      call('GET /x', 'dynamodb:Query', 'table', ['TASK#']),
      call('GET /y', 'dynamodb:GetItem', 'table', ['TASK#']),
    ]);
    expect(report.denied).toEqual([
      'GET /x: dynamodb:Query on table for keys TASK# is not allowed by its role (1x)',
      'GET /y: no deployed function runs it (dynamodb:GetItem on table for keys TASK#, 1x)',
    ]);
  });

  it('reports a granted action no call used, and a key prefix no call used', () => {
    const wider: Statement[] = [
      { ...INTAKE[0], Condition: leadingKeys('TASK#', 'REPORT#') },
      INTAKE[1],
      { Effect: 'Allow', Action: 'dynamodb:PutItem', Resource: TABLE, Condition: leadingKeys('REPORT#') },
    ];
    const report = check(EVERY_GRANT, { Intake: wider, Reader: READER });
    expect(report.denied).toEqual([]);
    expect(report.unused).toEqual([
      'POST /alarm/report: dynamodb:GetItem on table for keys REPORT#* is granted but never used',
      'POST /alarm/report: dynamodb:UpdateItem on table for keys REPORT#* is granted but never used',
      'POST /alarm/report: dynamodb:PutItem on table for keys REPORT#* is granted but never used',
    ]);
    expect(report.ok).toBe(false);
  });

  it('reports a function that never ran, and leaves grants alone on a partial run or when excepted', () => {
    const onlyIntake = EVERY_GRANT.filter((r) => r.fn !== 'GET /x');
    expect(check(onlyIntake).unused).toEqual([
      'GET /x: never ran in the suite, so none of its grants is proven',
    ]);
    const partial = checkLeastPrivilege(onlyIntake, stack({ Intake: INTAKE, Reader: READER }), {
      unused: false,
      exceptions: [],
    });
    expect(partial).toMatchObject({ ok: true, unused: [] });
    const excepted = checkLeastPrivilege(onlyIntake, stack({ Intake: INTAKE, Reader: READER }), {
      unused: true,
      exceptions: [{ action: 'dynamodb:Query', resource: 'table/index/*', reason: 'a test reason' }],
    });
    expect(excepted).toMatchObject({ ok: true, excepted: 1, unused: [] });
  });
});

describe('the policy evaluator', () => {
  const get = { action: 'dynamodb:GetItem', resource: TABLE };

  it('matches IAM wildcards in actions and resources', () => {
    expect(globMatch('arn:aws:sns:*:*:*', 'arn:aws:sns:eu-west-1:1:topic')).toBe(true);
    expect(globMatch('arn:aws:sns:*:*:*', '*')).toBe(false);
    expect(globMatch('TASK#?2', 'TASK#12')).toBe(true);
    expect(globMatch('TASK#*', 'TASKNAME#x')).toBe(false);
    expect(evaluate([{ Effect: 'Allow', Action: 'dynamodb:Get*', Resource: '*' }], get)).toHaveLength(1);
    expect(evaluate([{ Effect: 'Allow', Action: 'dynamodb:getitem', Resource: TABLE }], get)).toHaveLength(1);
  });

  it('lets an explicit Deny win, and denies what no statement allows', () => {
    const allow: Statement = { Effect: 'Allow', Action: 'dynamodb:*', Resource: TABLE };
    const deny: Statement = { Effect: 'Deny', Action: 'dynamodb:GetItem', Resource: '*' };
    expect(evaluate([allow, deny], get)).toBeUndefined();
    expect(evaluate([allow], { ...get, action: 'sqs:SendMessage' })).toBeUndefined();
  });

  it('honours NotAction and NotResource', () => {
    const sms: Statement = { Effect: 'Allow', Action: 'sns:Publish', NotResource: 'arn:aws:sns:*:*:*' };
    expect(evaluate([sms], { action: 'sns:Publish', resource: '*' })).toHaveLength(1);
    expect(evaluate([sms], { action: 'sns:Publish', resource: 'arn:aws:sns:eu-west-1:1:t' })).toBeUndefined();
    const notAction: Statement = { Effect: 'Deny', NotAction: 'dynamodb:GetItem', Resource: '*' };
    expect(evaluate([{ Effect: 'Allow', Action: '*', Resource: '*' }, notAction], get)).toHaveLength(1);
  });

  it('holds ForAllValues for every value, vacuously for none, and ForAnyValue for one', () => {
    const s: Statement = {
      Effect: 'Allow',
      Action: '*',
      Resource: '*',
      Condition: leadingKeys('TASK#', 'APP#'),
    };
    const keys = (...v: string[]) => ({ 'dynamodb:LeadingKeys': v });
    expect(conditionsHold(s, keys('TASK#1', 'APP#2'))).toBe(true);
    expect(conditionsHold(s, keys('TASK#1', 'USER#2'))).toBe(false);
    // IAM's own rule: a Scan carries no partition key, so the condition cannot stop it.
    expect(conditionsHold(s, {})).toBe(true);
    const any: Statement = {
      ...s,
      Condition: { 'ForAnyValue:StringEquals': { 'dynamodb:LeadingKeys': ['DEPTS'] } },
    };
    expect(conditionsHold(any, keys('TASKS', 'DEPTS'))).toBe(true);
    expect(conditionsHold(any, {})).toBe(false);
  });

  it('refuses to guess at a condition operator it does not know', () => {
    const s: Statement = {
      Effect: 'Allow',
      Action: '*',
      Resource: '*',
      Condition: { NumericLessThan: { x: '1' } },
    };
    expect(() => evaluate([s], get)).toThrow(/unsupported condition operator NumericLessThan/);
  });

  it('turns a recorded call into a request: its resource by ARN, its key prefixes as leading keys', () => {
    const view = stack({});
    expect(requestOf(call('f', 'dynamodb:GetItem', 'table', ['TASK#', 'DEPTS']), view)).toEqual({
      action: 'dynamodb:GetItem',
      resource: TABLE,
      context: { 'dynamodb:LeadingKeys': ['TASK#…', 'DEPTS'] },
    });
  });
});
