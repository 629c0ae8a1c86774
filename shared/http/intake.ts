import type { IntakeAlarm } from '../domain/alarms/adapters.ts';
import { ping } from '../domain/alarms/heartbeat.ts';
import {
  acceptAlarms,
  authenticateIntake,
  type IntakeAnswer,
  requestLevel,
} from '../domain/alarms/intake.ts';
import type { ReportAnswer } from '../domain/alarms/report.ts';
import type { HeartbeatPinged } from '../domain/alarms/responses.ts';
import type { Task } from '../domain/tasks/model.ts';
import { alarmSender } from './auth/alarm.ts';
import { anyone } from './auth/public.ts';
import { type HttpEvent, header, httpHandler, rawBody } from './handler.ts';
import { noInput, parseJson } from './input.ts';

/** What an adapter reads of a request (each part parsed on demand). */
export interface IntakeRequest {
  method: string;
  query: Record<string, string>;
  /** The body as text (413 above 256 KiB). */
  text: () => string;
  /** The body as a JSON object, numbers kept exactly (400 when it is not one). */
  json: () => Record<string, unknown>;
  /** The body as form fields (`application/x-www-form-urlencoded`). */
  form: () => Record<string, string>;
}

function requestOf(event: HttpEvent): IntakeRequest {
  const query = Object.fromEntries(
    Object.entries(event.queryStringParameters ?? {}).filter(
      (e): e is [string, string] => e[1] !== undefined,
    ),
  );
  return {
    method: event.requestContext?.http?.method ?? 'POST',
    query,
    text: () => rawBody(event),
    json: () => parseJson(rawBody(event), true),
    form: () => Object.fromEntries(new URLSearchParams(rawBody(event))),
  };
}

/** Authenticates an adapter request from its query string or intake token (API guide §2.2). */
async function intakeTask(event: HttpEvent): Promise<{ task: Task; req: IntakeRequest }> {
  const req = requestOf(event);
  const task = await authenticateIntake({ query: req.query, authorization: header(event, 'authorization') });
  return { task, req };
}

/**
 * The handler of one inbound adapter: authenticate, let the adapter make alarms of the request, admit
 * and queue them. `single` adapters answer like `/alarm/report` (`{uuid, report_time}`); the others
 * (a notification of many alerts) `{uuids, report_time}`.
 */
export function intakeHandler(
  toAlarms: (req: IntakeRequest) => IntakeAlarm[],
): ReturnType<typeof adapterHandler<IntakeAnswer>>;
export function intakeHandler(
  toAlarms: (req: IntakeRequest) => IntakeAlarm[],
  single: true,
): ReturnType<typeof adapterHandler<ReportAnswer>>;
export function intakeHandler(toAlarms: (req: IntakeRequest) => IntakeAlarm[], single = false) {
  return adapterHandler<IntakeAnswer | ReportAnswer>(toAlarms, single);
}

function adapterHandler<T extends IntakeAnswer | ReportAnswer>(
  toAlarms: (req: IntakeRequest) => IntakeAlarm[],
  single: boolean,
) {
  return httpHandler<unknown, T>({ auth: alarmSender, input: noInput }, async (_input, ctx) => {
    const { task, req } = await intakeTask(ctx.event);
    const level = requestLevel(req.query);
    const answer = await acceptAlarms(task, toAlarms(req), level);
    return (single ? { uuid: answer.uuids[0], report_time: answer.report_time } : answer) as T;
  });
}

/** `GET|POST /alarm/heartbeat`: a task's ping (its dead man's switch). */
export const heartbeatHandler = httpHandler<unknown, HeartbeatPinged>(
  { auth: anyone, input: noInput },
  async (_i, ctx) => {
    const { task } = await intakeTask(ctx.event);
    return ping(task);
  },
);
