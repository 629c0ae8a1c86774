/**
 * The refusals of the API: each answer's HTTP status and envelope codes (the error table), and the
 * refusals each route can answer, derived from its auth and input or listed for the routes whose use
 * case refuses otherwise.
 */
import { type HandlerSpec, MAX_BODY_BYTES } from '../../shared/http/handler.ts';
import { authOf } from './auth.ts';
import type { RouteDoc } from './routes.ts';

/** A refusal answer of the API: its HTTP status, the envelope codes it carries, an example `msg`. */
interface Refusal {
  status: number;
  description: string;
  codes: number[];
  example: string;
}

/** The refusals, by the name of their response component. */
export const REFUSALS = {
  BadRequest: {
    status: 400,
    description: 'Malformed request: body not valid JSON, wrong content type.',
    codes: [400],
    example: 'request body is not valid JSON',
  },
  InvalidAlarm: {
    status: 400,
    description: 'Malformed request (400) or invalid alarm (4000).',
    codes: [400, 4000],
    example: 'ctn must be a JSON object',
  },
  Unauthorized: {
    status: 401,
    description: 'Application, task or alarm authentication failed.',
    codes: [401],
    example: 'signature invalid',
  },
  Forbidden: {
    status: 403,
    description:
      'The acting user may not act on that task, the app lacks the grant the route needs, or a request with the session cookie came from another origin or without its CSRF token.',
    codes: [403],
    example: 'user [7] has no permission on task [12]',
  },
  NotFound: {
    status: 404,
    description: 'Unknown department, user, task, workflow, alarm group or route.',
    codes: [404],
    example: 'task [12] not found',
  },
  Conflict: {
    status: 409,
    description: 'The request conflicts with the current state.',
    codes: [409],
    example: 'task [12] is already stopped',
  },
  TaskNotAccepting: {
    status: 409,
    description: 'The task is stopped (4001) or paused (4002).',
    codes: [4001, 4002],
    example: 'task was stopped',
  },
  PayloadTooLarge: {
    status: 413,
    description: `Body larger than ${MAX_BODY_BYTES / 1024} KiB.`,
    codes: [413],
    example: 'request body too large',
  },
  ValidationFailed: {
    status: 422,
    description:
      'Validation failed: `msg` is the first problem, `data.errors` lists all as `{field, message}`.',
    codes: [422],
    example: 'name must be at most 100 characters',
  },
  TooManyRequests: {
    status: 429,
    description: "The task's alarm rate limit was reached (4010), with a `Retry-After` header.",
    codes: [4010],
    example: 'task [12] reached its rate limit of 200 alarms per second',
  },
  SignInLocked: {
    status: 429,
    description:
      'Too many failed sign-ins for the account or from the address: refused, the right password too, until `Retry-After` seconds have passed.',
    codes: [429],
    example: 'too many failed sign-ins for this account: try again in 15 minutes',
  },
  InternalError: {
    status: 500,
    description: 'Unexpected failure (never a stack trace or a secret).',
    codes: [500],
    example: 'internal error',
  },
} satisfies Record<string, Refusal>;

export type RefusalName = keyof typeof REFUSALS;

/** The codes of the API guide §2.1, for the error table of the description and the reference page. */
export const ERROR_CODES: { code: number; status: number; when: string }[] = [
  { code: 0, status: 200, when: 'success' },
  { code: 400, status: 400, when: 'malformed request: body is not valid JSON, wrong content type' },
  { code: 401, status: 401, when: 'application, task or alarm authentication failed' },
  { code: 403, status: 403, when: 'the acting user may not act on that task' },
  { code: 404, status: 404, when: 'unknown department, user, task, workflow, alarm group, route' },
  { code: 409, status: 409, when: 'the request conflicts with the current state' },
  { code: 413, status: 413, when: 'body too large' },
  { code: 422, status: 422, when: 'validation failed (`data.errors` lists every field)' },
  {
    code: 429,
    status: 429,
    when: 'too many failed sign-ins (the account or the address is locked for a while)',
  },
  { code: 4000, status: 400, when: 'invalid alarm report' },
  { code: 4001, status: 409, when: 'alarm reported to a stopped task' },
  { code: 4002, status: 409, when: 'alarm reported to a paused task' },
  { code: 4010, status: 429, when: "the task's alarm rate limit was reached" },
  { code: 500, status: 500, when: 'unexpected failure' },
];

/** What an alarm intake refuses (API guide §7.1, §8.1: 4000, 401, 4001/4002, 4010). */
const INTAKE_REFUSALS: RefusalName[] = [
  'InvalidAlarm',
  'Unauthorized',
  'TaskNotAccepting',
  'PayloadTooLarge',
  'TooManyRequests',
  'InternalError',
];

/** The refusals of the routes whose use case refuses other than their auth and input say, by handler. */
const ROUTE_REFUSALS: Record<string, RefusalName[]> = {
  'functions/http/auth/sign-in.ts': [
    'BadRequest',
    'Unauthorized',
    'Forbidden',
    'PayloadTooLarge',
    'ValidationFailed',
    'SignInLocked',
    'InternalError',
  ],
  'functions/http/auth/change-password.ts': [
    'BadRequest',
    'Unauthorized',
    'Forbidden',
    'Conflict',
    'PayloadTooLarge',
    'ValidationFailed',
    'SignInLocked',
    'InternalError',
  ],
  'functions/http/auth/get-session.ts': ['Unauthorized', 'InternalError'],
  'functions/http/auth/oidc-start.ts': ['NotFound', 'InternalError'],
  'functions/http/auth/oidc-callback.ts': ['NotFound', 'ValidationFailed', 'InternalError'],
  'functions/alarm/report-alarm.ts': INTAKE_REFUSALS,
  'functions/alarm/test-alarm.ts': ['BadRequest', 'Unauthorized', 'PayloadTooLarge', 'InternalError'],
  'functions/alarm/intake-alertmanager.ts': INTAKE_REFUSALS,
  'functions/alarm/intake-grafana.ts': INTAKE_REFUSALS,
  'functions/alarm/intake-jsonbody.ts': INTAKE_REFUSALS,
  'functions/alarm/intake-rawbody.ts': INTAKE_REFUSALS,
  'functions/alarm/intake-falcon.ts': INTAKE_REFUSALS,
  'functions/alarm/intake-aliyun.ts': INTAKE_REFUSALS,
  'functions/alarm/heartbeat.ts': ['Unauthorized', 'Conflict', 'InternalError'],
  // Authenticated by the feed key in the query alone.
  'functions/http/schedule/ical-feed.ts': ['Unauthorized', 'ValidationFailed', 'InternalError'],
};

const hasBody = (input: HandlerSpec['input']) =>
  input === 'json' || input === 'any-json' || input === 'form-or-query';

/**
 * The refusals a route can answer, by status: listed for it, or from its auth and input (`validates`:
 * whether its input is checked against a schema).
 */
export function refusalsOf(doc: RouteDoc, validates: boolean): RefusalName[] {
  const given = ROUTE_REFUSALS[doc.route.handler];
  if (given) return given;
  const auth = authOf(doc);
  const { input } = doc.spec;
  const out = new Set<RefusalName>(['InternalError']);
  if (hasBody(input)) {
    out.add('BadRequest');
    out.add('PayloadTooLarge');
  }
  if (auth !== 'none') out.add('Unauthorized');
  // A grant an app lacks, a session's request from elsewhere or without its CSRF token.
  if (auth === 'app|person' || auth === 'reader' || auth === 'admin' || auth === 'person')
    out.add('Forbidden');
  const actsOnData = auth === 'app' || auth === 'app|person' || auth === 'reader' || auth === 'admin';
  if ((actsOnData && input !== 'none') || auth === 'app+task') {
    for (const r of ['Forbidden', 'NotFound', 'ValidationFailed'] as const) out.add(r);
    if (doc.route.method !== 'GET') out.add('Conflict');
  } else if (input !== 'none' && validates) {
    out.add('ValidationFailed');
  }
  return [...out].sort((a, b) => REFUSALS[a].status - REFUSALS[b].status);
}
