import { describe, expect, it } from 'vitest';
import type { AlarmError } from '../errors.ts';
import {
  fromAlertmanager,
  fromAliyun,
  fromFalcon,
  fromGrafana,
  fromJsonBody,
  fromRawBody,
  fromRawQuery,
  severityLevel,
} from './adapters.ts';
import { namedUuid } from './ids.ts';

const alert = (over: Record<string, unknown> = {}) => ({
  status: 'firing',
  labels: { alertname: 'A', severity: 'warning' },
  annotations: { summary: 's' },
  startsAt: '2026-11-24T08:00:00Z',
  endsAt: '0001-01-01T00:00:00Z',
  generatorURL: 'http://p/graph',
  fingerprint: 'abc',
  ...over,
});

describe('severity labels', () => {
  it.each([
    [{ severity: 'critical' }, 3],
    [{ severity: 'CRITICAL ' }, 3],
    [{ severity: 'error' }, 2],
    [{ severity: 'warning' }, 1],
    [{ severity: 'info' }, 0],
    [{ level: 'major' }, 2],
    [{ priority: 'P1' }, 3],
    [{ severity: 'whatever' }, undefined],
    [{}, undefined],
  ])('%j -> %s', (labels, level) => {
    expect(severityLevel(labels)).toBe(level);
  });
});

describe('Alertmanager and Grafana alerts', () => {
  it('keep the same content from firing to resolved, and resolved is a recovery', () => {
    const [fired] = fromAlertmanager({ version: '4', alerts: [alert()] });
    const [resolved] = fromAlertmanager({
      version: '4',
      alerts: [alert({ status: 'resolved', endsAt: '2026-11-24T08:05:00Z' })],
    });
    expect(resolved.ctn).toEqual(fired.ctn);
    expect(fired.recovery).toBeUndefined();
    expect(resolved.recovery).toBe(true);
    expect(fired.level).toBe(1);
    expect(fired.dedupKey).not.toBe(resolved.dedupKey);
  });

  it('name an alert without a fingerprint by its labels, in any order', () => {
    const a = fromAlertmanager({ alerts: [alert({ fingerprint: undefined, labels: { b: '1', a: '2' } })] });
    const b = fromAlertmanager({ alerts: [alert({ fingerprint: undefined, labels: { a: '2', b: '1' } })] });
    expect(a[0].ctn.fingerprint).toBe(b[0].ctn.fingerprint);
  });

  it('refuse what is not a notification with 4000 naming the field', () => {
    const code = (f: () => unknown) => {
      try {
        f();
      } catch (err) {
        return [(err as AlarmError).code, (err as AlarmError).message];
      }
      return undefined;
    };
    expect(code(() => fromAlertmanager({ version: '3', alerts: [] }))).toEqual([
      4000,
      'version 3 is not supported (Alertmanager webhook version 4 is)',
    ]);
    expect(code(() => fromAlertmanager({}))).toEqual([4000, 'alerts must be a JSON array']);
    expect(code(() => fromAlertmanager({ alerts: [alert({ labels: 'x' })] }))).toEqual([
      4000,
      'alerts[0].labels must be a JSON object',
    ]);
    expect(code(() => fromGrafana({ title: 'x' }))).toEqual([
      4000,
      'alerts (Grafana alerting) or msgtype (DingDing notifier) is required',
    ]);
    expect(code(() => fromGrafana({ msgtype: 'link' }))).toEqual([
      4000,
      'link is required when msgtype is link',
    ]);
    expect(code(() => fromJsonBody([1]))).toEqual([4000, 'request body must be a JSON object']);
    expect(code(() => fromRawBody(''))).toEqual([4000, 'request body must not be empty']);
    expect(code(() => fromFalcon({ taskid: '1', sign: 'x', timestamp: '1' }))).toEqual([
      4000,
      'the query must carry the alarm parameters',
    ]);
  });
});

describe('the original adapters', () => {
  it.each([
    '99999999999999999999999',
    '253402300800000',
    '-1',
    '1.5',
    '1e12',
    '-0',
    'NaN',
    'Infinity',
    '0x10',
    ' 1764000000000',
    'soon',
  ])('aliyun refuses the timestamp %s with 4000 naming the field', (timestamp) => {
    const act = () => fromAliyun({ alertName: 'cpu', timestamp }, 'UTC');
    expect(act).toThrowError(
      expect.objectContaining({ status: 400, code: 4000, message: expect.stringMatching(/^timestamp /) }),
    );
  });

  it.each([
    ['0', '1970-01-01 00:00:00'],
    ['253402300799999', '9999-12-31 23:59:59'],
  ])('aliyun dates the timestamp %s as %s', (timestamp, date) => {
    expect(fromAliyun({ timestamp }, 'UTC')[0].ctn.date).toBe(date);
  });

  it('falcon drops the credentials and keeps every other parameter', () => {
    expect(
      fromFalcon({ taskid: '1', timestamp: '2', sign: 's', token: 't', level: '1', endpoint: 'e' }),
    ).toEqual([{ ctn: { endpoint: 'e' } }]);
  });

  it('rawbody by GET is {body: ""} with the parameters but the credentials added', () => {
    expect(fromRawQuery({ taskid: '1', timestamp: '2', sign: 's', token: 't', level: '1' })).toEqual([
      { ctn: { body: '' } },
    ]);
    expect(fromRawQuery({ taskid: '1', token: 't', host: 'web-2', body: 'disk full' })).toEqual([
      { ctn: { body: 'disk full', host: 'web-2' } },
    ]);
  });

  it('aliyun keeps its own timestamp, drops the signature and reads dimensions and expression', () => {
    const [a] = fromAliyun(
      {
        timestamp: '1764000000000',
        signature: 'x',
        dimensions: '{a=1,b=}',
        expression: '$Maximum>5',
        ruleId: 'r 1',
      },
      'Asia/Shanghai',
    );
    expect(a.ctn).toEqual({
      timestamp: '1764000000000',
      dimensions: '{a=1,b=}',
      expression: '$Maximum>5',
      ruleId: 'r 1',
      a: '1',
      a_urlencode: '1',
      b: null,
      b_urlencode: '',
      condition: '最大值',
      expression_condition: 'Maximum',
      expiression_condition: 'Maximum',
      threshold: '>5',
      date: '2025-11-25 00:00:00',
      ruleId_urlencode: 'r%201',
    });
  });
});

describe('named uuids', () => {
  it('are UUIDs, the same for the same task and key, different otherwise', () => {
    const u = namedUuid(1, 'k');
    expect(u).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(namedUuid(1, 'k')).toBe(u);
    expect(namedUuid(2, 'k')).not.toBe(u);
    expect(namedUuid(1, 'l')).not.toBe(u);
  });
});
