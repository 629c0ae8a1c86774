import { describe, expect, it } from 'vitest';
import { verifySignature } from '../domain/auth/signature.ts';
import { appSpecTarget, type CheckDeps, type CheckTarget, preTrafficCheck } from './pre-traffic.ts';

const EVENT = { DeploymentId: 'd-1', LifecycleEventHookExecutionId: 'h-1' };
const TARGETS: CheckTarget[] = [
  { functionName: 'report-fn', version: '7', probe: 'report' },
  { functionName: 'monitors-fn', version: '3', probe: 'monitors' },
  { functionName: 'alarm-fn', version: '9', probe: 'consumer' },
  { functionName: 'runner-fn', version: '4', probe: 'schedule' },
];

const envelope = (statusCode: number, code: number) => ({
  statusCode,
  body: JSON.stringify({ code, msg: '' }),
});

/** Deps whose functions answer as `answer` says; records the calls and the status reported. */
function deps(
  answer: (fn: string, event: Record<string, unknown>) => { payload: unknown; error?: string },
  moved: { functionName?: string; version?: string } = {},
  task?: { id: number; token: string },
) {
  const calls: { fn: string; version: string; event: Record<string, unknown> }[] = [];
  const reported: string[] = [];
  const d: CheckDeps = {
    deploymentOf: async () => moved,
    invoke: async (fn, version, event) => {
      calls.push({ fn, version, event: event as Record<string, unknown> });
      return answer(fn, event as Record<string, unknown>);
    },
    report: async (_e, status) => void reported.push(status),
    checkTask: async () => task,
  };
  return { d, calls, reported };
}

const healthy = (fn: string, event: Record<string, unknown>) => {
  if (fn === 'report-fn') {
    const body = JSON.parse(String(event.body)) as { sign?: string };
    return { payload: envelope(200, body.sign ? 0 : 401) };
  }
  if (fn === 'monitors-fn') return { payload: envelope(401, 401) };
  if (fn === 'alarm-fn') return { payload: { batchItemFailures: [] } };
  return { payload: { ran: 0, failed: 0 } };
};

describe('the pre-traffic check', () => {
  it('calls only the version the deployment moves to, as its callers would, and reports Succeeded', async () => {
    // Arrange
    const { d, calls, reported } = deps(healthy, {
      functionName: 'arn:aws:lambda:eu-west-1:1:function:alarm-fn',
      version: '10',
    });
    // Act
    const failures = await preTrafficCheck(EVENT, TARGETS, d);
    // Assert
    expect(failures).toEqual([]);
    expect(calls.map((c) => [c.fn, c.version])).toEqual([['alarm-fn', '10']]);
    expect(calls[0].event).toEqual({ Records: [] });
    expect(reported).toEqual(['Succeeded']);
  });

  it('sends the intake version a test report signed with the check task token, and fails it on a refusal', async () => {
    // Arrange: a version that refuses everything (HTTP 200 with a code, as intake answers)
    const task = { id: 100001, token: 'a'.repeat(40) };
    const refusing = deps(() => ({ payload: envelope(200, 401) }), { functionName: 'report-fn' }, task);
    const accepting = deps(healthy, { functionName: 'report-fn' }, task);
    // Act
    const refused = await preTrafficCheck(EVENT, TARGETS, refusing.d);
    const accepted = await preTrafficCheck(EVENT, TARGETS, accepting.d);
    // Assert
    expect(refused).toEqual([
      'report-fn:7 (report) refused the signed test report of task 100001 (code 401)',
    ]);
    expect(refusing.reported).toEqual(['Failed']);
    expect(accepted).toEqual([]);
    const { event } = accepting.calls[0];
    expect(event).toMatchObject({
      routeKey: 'POST /alarm/test',
      requestContext: { http: { method: 'POST' } },
    });
    const body = JSON.parse(String(event.body)) as { taskid: number; timestamp: string; sign: string };
    expect(body.taskid).toBe(task.id);
    expect(verifySignature(task.token, body.taskid, body.timestamp, body.sign, false)).toBe(true);
  });

  it('without a check task, expects the unsigned report refused with an envelope', async () => {
    const ok = deps(healthy, { functionName: 'report-fn' });
    const lax = deps(() => ({ payload: envelope(200, 0) }), { functionName: 'report-fn' });
    const broken = deps(() => ({ payload: { statusCode: 502, body: 'Bad Gateway' } }), {
      functionName: 'report-fn',
    });
    expect(await preTrafficCheck(EVENT, TARGETS, ok.d)).toEqual([]);
    expect(await preTrafficCheck(EVENT, TARGETS, lax.d)).toEqual([
      'report-fn:7 (report) accepted an unsigned test report',
    ]);
    expect(await preTrafficCheck(EVENT, TARGETS, broken.d)).toEqual([
      'report-fn:7 (report) answered HTTP 502 without an envelope',
    ]);
  });

  it('fails on a function error, a consumer that fails an empty batch, a monitor adapter that accepts', async () => {
    const { d, reported } = deps((fn) => {
      if (fn === 'runner-fn')
        return { payload: undefined, error: 'Unhandled: config: TABLE_NAME is not set' };
      if (fn === 'alarm-fn') return { payload: { batchItemFailures: [{ itemIdentifier: 'x' }] } };
      if (fn === 'monitors-fn') return { payload: envelope(200, 0) };
      return healthy(fn, { body: '{}' });
    });
    // The deployment does not say which function it moves: every target is checked.
    const failures = await preTrafficCheck(EVENT, TARGETS, d);
    expect(failures).toEqual([
      'monitors-fn:3 (monitors) answered a report without credentials with HTTP 200',
      'alarm-fn:9 (consumer) answered an empty batch with {"batchItemFailures":[{"itemIdentifier":"x"}]}',
      'runner-fn:4 (schedule) failed: Unhandled: config: TABLE_NAME is not set',
    ]);
    expect(reported).toEqual(['Failed']);
  });

  it('reports Failed when it cannot read the deployment', async () => {
    const { d, reported, calls } = deps(healthy);
    d.deploymentOf = async () => {
      throw new Error('AccessDenied');
    };
    expect(await preTrafficCheck(EVENT, TARGETS, d)).toEqual(['the check could not run: AccessDenied']);
    expect(calls).toEqual([]);
    expect(reported).toEqual(['Failed']);
  });
});

describe("a deployment's AppSpec", () => {
  it('names the function and target version, in JSON or YAML', () => {
    const json = JSON.stringify({
      version: 0.0,
      Resources: [
        {
          fn: {
            Type: 'AWS::Lambda::Function',
            Properties: {
              Name: 'Tocsin-prod-AlarmConsumer',
              Alias: 'live',
              CurrentVersion: '4',
              TargetVersion: '5',
            },
          },
        },
      ],
    });
    const yaml = [
      'version: 0.0',
      'Resources:',
      '  - fn:',
      '      Type: AWS::Lambda::Function',
      '      Properties:',
      '        Name: "Tocsin-prod-AlarmReport"',
      '        Alias: "live"',
      '        CurrentVersion: "11"',
      '        TargetVersion: "12"',
    ].join('\n');
    expect(appSpecTarget(json)).toEqual({ functionName: 'Tocsin-prod-AlarmConsumer', version: '5' });
    expect(appSpecTarget(yaml)).toEqual({ functionName: 'Tocsin-prod-AlarmReport', version: '12' });
    expect(appSpecTarget(undefined)).toEqual({});
  });
});
