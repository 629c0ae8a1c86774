/**
 * What the document calls each route: its operation id, tag, summary and description (from the
 * handler's doc comment).
 */
import { routeName as operationId } from '../gen-events.ts';
import { authOf } from './auth.ts';
import type { RouteDoc } from './routes.ts';

export { operationId };

/** Tag (by the path's first segment) and its description; unknown segments are their own tag. */
const TAGS: Record<string, { name: string; description: string }> = {
  health: { name: 'Service', description: 'Liveness.' },
  department: {
    name: 'Directory',
    description: 'Departments and users (loaded by `npm run admin -- import`).',
  },
  user: { name: 'Directory', description: 'Departments and users (loaded by `npm run admin -- import`).' },
  alarmtask: { name: 'Alarm tasks', description: 'Create, configure and run alarm tasks (API guide §5).' },
  alarm: { name: 'Alarm ingestion', description: 'Reporting alarms with the alarm SDKs (API guide §7).' },
  workflow: { name: 'Workflows', description: 'The workflows alarms open (API guide §10).' },
  auth: {
    name: 'Sign-in',
    description:
      'People sign in to the console: account and password, or single sign-on through OpenID Connect (docs/sign-in.md).',
  },
  claim: {
    name: 'Claim links',
    description:
      'The claim link in the messages about a pending workflow: a page that changes nothing, and the claim (API guide §11.7).',
  },
  'openapi.json': { name: 'Docs', description: 'This document and its reference page.' },
  docs: { name: 'Docs', description: 'This document and its reference page.' },
};
const INTAKE_TAG = {
  name: 'Monitor adapters',
  description:
    'Alerts from Alertmanager, Grafana, Open-Falcon, CloudMonitor and any JSON or text sender; heartbeats.',
};

export function tagOf(doc: Pick<RouteDoc, 'route' | 'spec'>): { name: string; description?: string } {
  if (authOf(doc) === 'intake-query') return INTAKE_TAG;
  const segment = doc.route.path.split('/')[1] ?? '';
  return TAGS[segment] ?? { name: segment.charAt(0).toUpperCase() + segment.slice(1) };
}

/**
 * Summaries of the routes whose doc comment starts with something else than one; the others take the
 * first sentence of their comment.
 */
const SUMMARIES: Record<string, string> = {
  'GET /health': 'Liveness and version',
  'GET /department/simple': 'List departments',
  'GET /department/show': 'Show a department',
  'GET /user/profile': "A user's profile and task permissions",
  'PUT /user/updatephone': "Update a user's phone",
  'POST /alarmtask/store': 'Create an alarm task',
  'GET /alarmtask/show': 'Show an alarm task',
  'PUT /alarmtask/update': 'Replace an alarm task',
  'PUT /alarmtask/updatefields': 'Update fields of an alarm task',
  'DELETE /alarmtask': 'Delete an alarm task',
  'POST /alarm/report': 'Report an alarm',
  'POST /alarm/test': "Check the alarm SDK's authentication",
  'GET /workflow/show': 'Show a workflow',
  'PUT /workflow/claim': 'Claim workflows',
  'PUT /workflow/assign': 'Assign workflows',
  'PUT /workflow/processed': 'Mark workflows processed',
  'PUT /workflow/reactive': 'Reactivate workflows',
  'PUT /workflow/close': 'Close workflows',
  'PUT /alarmtask/stop': 'Stop an alarm task',
  'PUT /alarmtask/start': 'Start an alarm task',
  'PUT /alarmtask/pause': 'Pause an alarm task',
  'PUT /alarmtask/intake': 'Issue or revoke the intake token, or turn the fixed signature on or off',
  'PUT /alarmtask/ratelimit': "Set the task's alarm rate limit",
  'PUT /alarmtask/heartbeat': "Set the task's heartbeat",
  'GET /alarm/rawbody': 'An alarm without a body (its query parameters added)',
  'POST /alarm/rawbody': 'Any text body as an alarm',
  'POST /alarm/arms': 'Any text body as an alarm (ARMS)',
  'GET /alarm/falcon': 'Open-Falcon callback',
  'POST /alarm/falcon': 'Open-Falcon callback (form body)',
  'GET /alarm/heartbeat': "A task's heartbeat ping",
  'POST /alarm/heartbeat': "A task's heartbeat ping",
  'POST /auth/signin': 'Sign in with an account and a password',
  'GET /auth/session': 'The signed-in person and the CSRF token',
  'POST /auth/signout': 'Sign out (here or everywhere)',
  'PUT /auth/password': 'Change your own password',
  'GET /auth/oidc/start': 'Single sign-on: go to the OpenID Connect provider',
  'GET /auth/oidc/callback': 'Single sign-on: back from the provider',
  'GET /openapi.json': 'This OpenAPI document',
  'GET /docs': 'The API reference page',
  'GET /claim': "A claim link's page",
  'POST /claim': 'Claim a workflow with a claim link',
};

const ROUTE_PREFIX = /^(?:(?:GET|POST|PUT|DELETE)\|?)+\s+\/\S*/;

/** The doc comment without the route it starts with. */
export function descriptionOf(comment: string | undefined): string {
  return (comment ?? '')
    .trim()
    .replace(ROUTE_PREFIX, '')
    .replace(/^\s*[:;,.-]\s*/, '')
    .trim();
}

/** An explicit summary, else the description's first sentence, else the route. */
export function summaryOf(doc: RouteDoc): string {
  const key = `${doc.route.method} ${doc.route.path}`;
  if (SUMMARIES[key]) return SUMMARIES[key];
  const first = descriptionOf(doc.comment)
    .replace(/^\([^)]*\)\s*[:;,.-]?\s*/, '')
    .split(/(?<=[a-z0-9)`'"])[.;:](?:\s|$)|\s\(/)[0]
    .trim();
  if (!first) return key;
  const text = first.charAt(0).toUpperCase() + first.slice(1);
  return text.length > 90 ? `${text.slice(0, 87)}...` : text;
}
