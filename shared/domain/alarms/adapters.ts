import { createHash } from 'node:crypto';
import { formatDateTime } from '../../clock.ts';
import { isObject, isRawJson, textOf } from '../../json.ts';
import { AlarmError } from '../errors.ts';
import type { Level } from '../../contracts/levels.ts';

/**
 * Inbound adapters (API guide §8): what the monitoring systems people run send,
 * turned into alarms. Pure functions: authentication, admission and queueing are intake.ts's.
 */

/** One alarm an adapter makes of a request. */
export interface IntakeAlarm {
  ctn: Record<string, unknown>;
  /** From the alert itself (severity label); else the request's `level`, else 0. */
  level?: Level;
  /** The monitor says the alert is resolved: a recovery (API guide §9.2) of the same content. */
  recovery?: true;
  /**
   * What makes this alarm the same alarm when the monitor sends it again (an Alertmanager group
   * re-sent whole, a retry): its uuid is derived from it, so the pipeline takes it once.
   */
  dedupKey?: string;
}

/** A JSON object of the request (a number kept as its source text is not one). */
const isBodyObject = (v: unknown): v is Record<string, unknown> => isObject(v) && !isRawJson(v);

/**
 * Severity labels (`severity`, else `level` or `priority`) to alarm levels (interface: 0 notice,
 * 1 warning, 2 error, 3 urgent). Unknown values keep the request's level.
 */
const SEVERITIES: Record<string, Level> = {
  critical: 3,
  crit: 3,
  urgent: 3,
  emergency: 3,
  fatal: 3,
  page: 3,
  disaster: 3,
  p0: 3,
  p1: 3,
  error: 2,
  err: 2,
  high: 2,
  major: 2,
  p2: 2,
  warning: 1,
  warn: 1,
  average: 1,
  medium: 1,
  minor: 1,
  p3: 1,
  info: 0,
  information: 0,
  informational: 0,
  notice: 0,
  low: 0,
  none: 0,
  ok: 0,
  p4: 0,
  p5: 0,
};

export function severityLevel(labels: unknown): Level | undefined {
  if (!isBodyObject(labels)) return undefined;
  for (const name of ['severity', 'level', 'priority']) {
    const v = labels[name];
    if (typeof v === 'string') {
      const level = SEVERITIES[v.trim().toLowerCase()];
      if (level !== undefined) return level;
    }
  }
  return undefined;
}

/** Alertmanager and Grafana alerts carry a fingerprint; an alert without one is named by its labels. */
function fingerprintOf(alert: Record<string, unknown>): string {
  if (typeof alert.fingerprint === 'string' && alert.fingerprint !== '') return alert.fingerprint;
  const labels = isBodyObject(alert.labels) ? alert.labels : {};
  const text = Object.keys(labels)
    .sort()
    .map((k) => `${k}=${textOf(labels[k])}`)
    .join('\u0000');
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

/**
 * An alert of an Alertmanager (v4) or Grafana notification. `ctn` holds what identifies the alert and
 * stays the same from firing to resolved (labels, annotations, startsAt, generatorURL, fingerprint;
 * Grafana's dashboard and panel links), so a resolved alert computes the same compression metric as
 * its firing one and its recovery finishes that metric's workflow. endsAt and current values are
 * left out for that reason.
 */
function alertToAlarm(alert: unknown, i: number, source: string, extra: readonly string[]): IntakeAlarm {
  if (!isBodyObject(alert)) throw AlarmError.invalid(`alerts[${i}] must be a JSON object`);
  if (!isBodyObject(alert.labels)) throw AlarmError.invalid(`alerts[${i}].labels must be a JSON object`);
  const status = alert.status === 'resolved' ? 'resolved' : 'firing';
  const fingerprint = fingerprintOf(alert);
  const ctn: Record<string, unknown> = {
    labels: alert.labels,
    annotations: isBodyObject(alert.annotations) ? alert.annotations : {},
    startsAt: alert.startsAt ?? null,
    generatorURL: alert.generatorURL ?? '',
    fingerprint,
  };
  for (const k of extra) if (typeof alert[k] === 'string' && alert[k] !== '') ctn[k] = alert[k];
  const level = severityLevel(alert.labels);
  return {
    ctn,
    ...(level !== undefined ? { level } : {}),
    ...(status === 'resolved' ? { recovery: true as const } : {}),
    // Without a start time an alert's occurrences cannot be told apart: each is its own alarm.
    ...(typeof alert.startsAt === 'string' && alert.startsAt !== ''
      ? { dedupKey: `${source}:${fingerprint}:${alert.startsAt}:${status}` }
      : {}),
  };
}

function alertsOf(body: Record<string, unknown>): unknown[] {
  if (!Array.isArray(body.alerts)) throw AlarmError.invalid('alerts must be a JSON array');
  return body.alerts;
}

/** Prometheus Alertmanager's webhook (`version: "4"`): one alarm per alert. */
export function fromAlertmanager(body: Record<string, unknown>): IntakeAlarm[] {
  if (body.version !== undefined && body.version !== '4')
    throw AlarmError.invalid(
      `version ${textOf(body.version)} is not supported (Alertmanager webhook version 4 is)`,
    );
  return alertsOf(body).map((a, i) => alertToAlarm(a, i, 'alertmanager', []));
}

/** Grafana's unified alerting webhook: Alertmanager's shape plus links to the dashboard and panel. */
export function fromGrafanaAlerting(body: Record<string, unknown>): IntakeAlarm[] {
  return alertsOf(body).map((a, i) =>
    alertToAlarm(a, i, 'grafana', ['dashboardURL', 'panelURL', 'silenceURL']),
  );
}

/**
 * `/alarm/grafana`: Grafana's unified alerting JSON (it has `alerts`), or the original system's body,
 * a DingTalk robot message from Grafana's legacy DingDing notifier (`msgtype` and its object).
 */
export function fromGrafana(body: Record<string, unknown>): IntakeAlarm[] {
  if (Array.isArray(body.alerts)) return fromGrafanaAlerting(body);
  const msgtype = body.msgtype;
  if (typeof msgtype !== 'string' || msgtype === '')
    throw AlarmError.invalid('alerts (Grafana alerting) or msgtype (DingDing notifier) is required');
  const message = body[msgtype];
  if (!isBodyObject(message)) throw AlarmError.invalid(`${msgtype} is required when msgtype is ${msgtype}`);
  const link = message[msgtype === 'link' ? 'messageUrl' : 'singleURL'];
  const ctn: Record<string, unknown> = { ...message, msgtype, grafanaUrl: grafanaUrlOf(link) };
  if (typeof ctn.text === 'string') ctn.text = ctn.text.replaceAll('\\n', '\n');
  return [{ ctn }];
}

/** The DingDing notifier wraps Grafana's link as `dingtalk://...?url=<grafana link>`. */
function grafanaUrlOf(link: unknown): string {
  if (typeof link !== 'string') return '';
  try {
    return new URL(link).searchParams.get('url') ?? '';
  } catch {
    return '';
  }
}

/** `/alarm/jsonbody`: the whole body is the alarm content. */
export function fromJsonBody(body: unknown): IntakeAlarm[] {
  if (!isBodyObject(body)) throw AlarmError.invalid('request body must be a JSON object');
  return [{ ctn: body }];
}

/** `/alarm/rawbody`, `/alarm/arms`: any text; the content is `{body}`. */
export function fromRawBody(text: string): IntakeAlarm[] {
  if (text === '') throw AlarmError.invalid('request body must not be empty');
  return [{ ctn: { body: text } }];
}

/** The request parameters of the adapters that are not alarm content. */
export const INTAKE_PARAMS = ['taskid', 'timestamp', 'sign', 'token', 'level'] as const;

function withoutIntakeParams(params: Record<string, string>): Record<string, unknown> {
  const ctn: Record<string, unknown> = { ...params };
  for (const k of INTAKE_PARAMS) delete ctn[k];
  return ctn;
}

/** `/alarm/falcon` (Open-Falcon's callback, a GET): the query parameters are the content. */
export function fromFalcon(params: Record<string, string>): IntakeAlarm[] {
  const ctn = withoutIntakeParams(params);
  if (Object.keys(ctn).length === 0) throw AlarmError.invalid('the query must carry the alarm parameters');
  return [{ ctn }];
}

/**
 * `GET /alarm/rawbody`: a request without a body, so the content is `{body: ""}`, with the query
 * parameters but the credentials and the level added to it (a `body` parameter is the body's text).
 */
export function fromRawQuery(params: Record<string, string>): IntakeAlarm[] {
  return [{ ctn: { body: '', ...withoutIntakeParams(params) } }];
}

const ALIYUN_STATISTICS: Record<string, string> = {
  Maximum: '最大值',
  Minimum: '最小值',
  Average: '平均值',
};

/** Latest alarm time a `date` can be written for: 9999-12-31 23:59:59.999 UTC, in milliseconds. */
export const MAX_ALARM_TIME_MS = 253_402_300_799_999;

/**
 * CloudMonitor's `timestamp`: the alarm time in milliseconds, decimal digits only, at most
 * MAX_ALARM_TIME_MS (4000 naming the field otherwise: a time no date exists for is no alarm time).
 */
function aliyunTimestamp(text: string): number {
  const ms = /^\d{1,15}$/.test(text) ? Number(text) : Number.NaN;
  if (!(ms <= MAX_ALARM_TIME_MS))
    throw AlarmError.invalid(`timestamp must be the alarm time in milliseconds (0 to ${MAX_ALARM_TIME_MS})`);
  return ms;
}

/**
 * `/alarm/aliyun` (Alibaba Cloud CloudMonitor's alarm callback, a form body), as the original did:
 * the form fields without `signature`; `dimensions` (`{k=v, k2=v2}`) spread into fields with
 * URL-encoded twins; `expression` (`$Average>=90`) read into condition and threshold; `date` from
 * the millisecond `timestamp` (a timestamp that is no such time is refused, naming the field).
 */
export function fromAliyun(form: Record<string, string>, timeZone: string): IntakeAlarm[] {
  // The form is CloudMonitor's own (its `timestamp` is the alarm's time); the credentials are in the query.
  const ctn: Record<string, unknown> = { ...form };
  delete ctn.signature;
  if (Object.keys(ctn).length === 0) throw AlarmError.invalid('request body must carry the alarm fields');
  if (typeof form.dimensions === 'string') {
    for (const part of form.dimensions.replace(/^\{|\}$/g, '').split(',')) {
      const [key, value] = part.split('=');
      const k = key?.trim();
      if (!k || Object.hasOwn(ctn, k)) continue;
      const v = value?.trim() || null;
      ctn[k] = v;
      ctn[`${k}_urlencode`] = v === null ? '' : encodeURIComponent(v);
    }
  }
  const expression = /^\$(\w+)(.*)$/.exec(form.expression ?? '');
  if (expression) {
    ctn.condition = ALIYUN_STATISTICS[expression[1]] ?? 'UNKNOWN';
    ctn.expression_condition = expression[1];
    ctn.expiression_condition = expression[1]; // the original's spelling, for templates written for it
    ctn.threshold = expression[2];
  }
  if (form.timestamp) ctn.date = formatDateTime(Math.floor(aliyunTimestamp(form.timestamp) / 1000), timeZone);
  if (typeof form.ruleId === 'string') ctn.ruleId_urlencode = encodeURIComponent(form.ruleId);
  return [{ ctn }];
}
