/**
 * The one description of the service's routes. The CDK stack (infra/stack.ts) and the local runtime
 * (shared/local) both read these definitions, so the deployed API and `npm start` can never disagree
 * about a route; the queues, their consumers and the schedule are described the same way in
 * infra/consumers.ts, the table on the contracts floor (shared/contracts/table.ts). Pure data: no
 * runtime code is imported here. Every function says what it may do on AWS (`access`, built from the
 * parts in infra/access.ts); its role grants exactly that, and the integration suite proves it
 * (docs/aws-operations.md). A new route is a new entry of `routes` below.
 */
import {
  ALARM_LOG,
  APP_AUTH,
  APP_OR_PERSON,
  type Access,
  access,
  CLAIM_LINK,
  DEAD_LETTERS,
  INTAKE,
  PERSON_AUTH,
  ONCALL_RESOLVE,
  READER_AUTH,
  REPLAY_RUN,
  SCHEDULE_READ,
  SEAL_KEY,
  SIGN_IN,
  SSO_LOGIN,
  TASK_AUTH,
  TASK_CONFIG,
  TASK_DETAIL,
  TASK_READER,
  TASK_SETTING,
  TASK_STATUS,
  WEBHOOK_ATTEMPTS,
  WORKFLOW_ANNOUNCE,
  WORKFLOW_CHANGE,
  WORKFLOW_COUNTS,
  WORKFLOW_OPERATION,
} from './access.ts';

/**
 * How a route authenticates (shared/http/handler.ts says what each means): `app|person` is an
 * interface route the console calls too (an app, or a signed-in person); `reader` and `admin` are the
 * routes beyond the interface (a signed-in person, or an app holding the grant `read` / `admin`);
 * `person` needs a signed-in person.
 */
export type AuthKind =
  | 'none'
  | 'app'
  | 'app+task'
  | 'alarm'
  | 'local'
  | 'app|person'
  | 'reader'
  | 'admin'
  | 'person';

/**
 * Routes deployed together in one Lambda (RouteDef.fn): its entry dispatches on the event's `routeKey`
 * to each route's own handler module, and its access is the union of its routes' (access(...)). The alarm
 * intake routes are two such functions, so that their reserved concurrency stays a small sum
 * (docs/aws-operations.md, "Concurrency"). The local runtime serves the routes through the same entry.
 */
export const functionGroups = {
  /** POST /alarm/report and /alarm/test: senders that sign with the task token. */
  'alarm-report': { handler: 'functions/alarm/report-function.ts' },
  /** The monitor adapters and the heartbeat. */
  'alarm-monitors': { handler: 'functions/alarm/monitors-function.ts' },
  /**
   * The on-call schedule routes: one function for fourteen routes keeps the stack below
   * CloudFormation's 500 resources. Its role is the union of theirs (the calendar feed, which no one
   * signs, runs with the schedule writers' role, its code reading only).
   */
  oncall: { handler: 'functions/http/schedule/oncall-function.ts' },
} as const;
export type FunctionGroup = keyof typeof functionGroups;

export interface RouteDef {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  /** Handler entry, relative to the project root, exporting `handler`. */
  handler: string;
  auth: AuthKind;
  /** What the function may do on AWS (its role grants this and nothing else). */
  access: Access;
  /** Only mounted by the local runtime (never deployed). */
  localOnly?: boolean;
  /** The function group serving this route (functionGroups); without it the route has its own Lambda. */
  fn?: FunctionGroup;
  /**
   * A GET route that also answers HEAD (its function, without the body). API Gateway HTTP APIs match
   * a route's method exactly: a GET route alone leaves HEAD to the not-found default route.
   */
  head?: true;
}

export const routes: RouteDef[] = [
  {
    method: 'GET',
    path: '/health',
    handler: 'functions/http/health/get-health.ts',
    auth: 'none',
    access: {},
    head: true,
  },
  // Directory
  {
    method: 'GET',
    path: '/department/simple',
    handler: 'functions/http/department/list-departments.ts',
    auth: 'app|person',
    access: access(APP_OR_PERSON, { indexQueries: ['gsi1'] }),
  },
  {
    method: 'GET',
    path: '/department/show',
    handler: 'functions/http/department/show-department.ts',
    auth: 'app',
    access: access(APP_AUTH, { items: { GetItem: ['BU#', 'DEPT#'], BatchGetItem: ['USER#'] } }),
  },
  {
    method: 'GET',
    path: '/user/profile',
    handler: 'functions/http/user/show-profile.ts',
    auth: 'app',
    access: access(APP_AUTH, { items: { GetItem: ['USER#'] }, indexQueries: ['gsi1'] }),
  },
  {
    method: 'PUT',
    path: '/user/updatephone',
    handler: 'functions/http/user/update-phone.ts',
    auth: 'app',
    access: access(APP_AUTH, { items: { UpdateItem: ['USER#'] } }),
  },
  // Alarm tasks
  {
    method: 'POST',
    path: '/alarmtask/store',
    handler: 'functions/http/alarmtask/store-task.ts',
    auth: 'app',
    access: access(APP_AUTH, TASK_CONFIG, { items: { UpdateItem: ['COUNTER#'] } }),
  },
  {
    method: 'GET',
    path: '/alarmtask/show',
    handler: 'functions/http/alarmtask/show-task.ts',
    auth: 'app+task',
    access: access(TASK_AUTH, TASK_DETAIL),
  },
  {
    method: 'PUT',
    path: '/alarmtask/update',
    handler: 'functions/http/alarmtask/update-task.ts',
    auth: 'app+task',
    // With `replay_id`: the replay it must save (its task version and configuration).
    access: access(TASK_AUTH, TASK_CONFIG, {
      items: { DeleteItem: ['SCHEDULE#', 'TASK#', 'TASKNAME#'], GetItem: ['REPLAY#'] },
    }),
  },
  {
    method: 'PUT',
    path: '/alarmtask/updatefields',
    handler: 'functions/http/alarmtask/update-task-fields.ts',
    auth: 'app+task',
    access: access(TASK_AUTH, TASK_CONFIG, {
      items: { DeleteItem: ['SCHEDULE#', 'TASK#', 'TASKNAME#'], GetItem: ['REPLAY#'] },
    }),
  },
  {
    method: 'DELETE',
    path: '/alarmtask',
    handler: 'functions/http/alarmtask/delete-task.ts',
    auth: 'app+task',
    // The schedules it named lose their reference (item and count).
    access: access(TASK_AUTH, {
      items: { Query: ['TASK#'], DeleteItem: ['SCHEDULE#', 'TASK#', 'TASKNAME#'], UpdateItem: ['SCHEDULE#'] },
    }),
  },
  {
    method: 'PUT',
    path: '/alarmtask/stop',
    handler: 'functions/http/alarmtask/stop-task.ts',
    auth: 'app+task',
    access: access(TASK_AUTH, TASK_SETTING),
  },
  {
    method: 'PUT',
    path: '/alarmtask/start',
    handler: 'functions/http/alarmtask/start-task.ts',
    auth: 'app+task',
    access: access(TASK_AUTH, TASK_SETTING),
  },
  {
    method: 'PUT',
    path: '/alarmtask/pause',
    handler: 'functions/http/alarmtask/pause-task.ts',
    auth: 'app+task',
    access: access(TASK_AUTH, TASK_STATUS),
  },
  {
    method: 'PUT',
    path: '/alarmtask/intake',
    handler: 'functions/http/alarmtask/intake-token.ts',
    auth: 'app+task',
    access: access(TASK_AUTH, TASK_SETTING),
  },
  {
    method: 'PUT',
    path: '/alarmtask/ratelimit',
    handler: 'functions/http/alarmtask/rate-limit-task.ts',
    auth: 'app+task',
    access: access(TASK_AUTH, TASK_SETTING),
  },
  {
    method: 'PUT',
    path: '/alarmtask/retention',
    handler: 'functions/http/alarmtask/retention-task.ts',
    auth: 'app+task',
    access: access(TASK_AUTH, TASK_SETTING),
  },
  {
    // New task token and/or secret; the old ones stay valid for the overlap.
    method: 'PUT',
    path: '/alarmtask/credentials',
    handler: 'functions/http/alarmtask/rotate-credentials.ts',
    auth: 'app+task',
    access: access(TASK_AUTH, TASK_SETTING),
  },
  {
    method: 'PUT',
    path: '/alarmtask/heartbeat',
    handler: 'functions/http/alarmtask/heartbeat-task.ts',
    auth: 'app+task',
    access: access(TASK_AUTH, TASK_STATUS, { queues: { SendMessage: ['alarm'] } }),
  },
  // Alarm ingestion
  {
    method: 'POST',
    path: '/alarm/report',
    handler: 'functions/alarm/report-alarm.ts',
    fn: 'alarm-report',
    auth: 'alarm',
    // Writes only the opt-in idempotency receipt of a client-chosen uuid (and a sign of life); an
    // override's alarm groups and schedules must exist.
    access: access(INTAKE, {
      items: {
        GetItem: ['REPORT#'],
        PutItem: ['REPORT#'],
        UpdateItem: ['REPORT#'],
        BatchGetItem: ['GROUP#', 'SCHEDULE#'],
      },
    }),
  },
  {
    method: 'POST',
    path: '/alarm/test',
    handler: 'functions/alarm/test-alarm.ts',
    fn: 'alarm-report',
    auth: 'alarm',
    access: access(SEAL_KEY, { items: { GetItem: ['TASK#'] } }),
  },
  // Inbound adapters for monitors (API guide §8): authenticated by `taskid` and
  // a fixed signature or the intake token in the query (or the token as a bearer header). They keep
  // the HTTP statuses (API guide §2.2). Write access: an alarm is a heartbeat's sign of life.
  ...(
    [
      ['POST', '/alarm/alertmanager', 'intake-alertmanager'],
      ['POST', '/alarm/grafana', 'intake-grafana'],
      ['POST', '/alarm/jsonbody', 'intake-jsonbody'],
      ['GET', '/alarm/rawbody', 'intake-rawbody'],
      ['POST', '/alarm/rawbody', 'intake-rawbody'],
      ['POST', '/alarm/arms', 'intake-rawbody'],
      ['GET', '/alarm/falcon', 'intake-falcon'],
      ['POST', '/alarm/falcon', 'intake-falcon'],
      ['POST', '/alarm/aliyun', 'intake-aliyun'],
    ] as const
  ).map(
    ([method, path, file]): RouteDef => ({
      method,
      path,
      handler: `functions/alarm/${file}.ts`,
      fn: 'alarm-monitors',
      auth: 'alarm',
      access: INTAKE,
    }),
  ),
  ...(['GET', 'POST'] as const).map(
    (method): RouteDef => ({
      method,
      path: '/alarm/heartbeat',
      handler: 'functions/alarm/heartbeat.ts',
      fn: 'alarm-monitors',
      auth: 'alarm',
      access: INTAKE,
    }),
  ),
  // Workflows
  {
    method: 'GET',
    path: '/workflow/show',
    handler: 'functions/http/workflow/show-workflow.ts',
    auth: 'app|person',
    // A signed-in person sees it only when they may read its task.
    access: access(APP_OR_PERSON, TASK_READER, {
      items: { Query: ['WF#'], GetItem: ['DEPT#', 'TASK#'], BatchGetItem: ['USER#'] },
    }),
  },
  ...(['claim', 'assign', 'processed', 'reactive', 'close'] as const).map(
    (op): RouteDef => ({
      method: 'PUT',
      path: `/workflow/${op}`,
      handler: `functions/http/workflow/${op}-workflows.ts`,
      auth: 'app|person',
      // Assigning keeps the status, so it never moves the counts.
      access: op === 'assign' ? WORKFLOW_OPERATION : access(WORKFLOW_OPERATION, WORKFLOW_COUNTS),
    }),
  ),
  // Claim links (API guide §11.7): public, the link's token is the credential. The page changes
  // nothing; the claim is the claim of PUT /workflow/claim, and marks the link used (or gives it back).
  {
    method: 'GET',
    path: '/claim',
    handler: 'functions/http/claim/get-claim.ts',
    auth: 'none',
    access: CLAIM_LINK,
    head: true,
  },
  {
    method: 'POST',
    path: '/claim',
    handler: 'functions/http/claim/post-claim.ts',
    auth: 'none',
    access: access(CLAIM_LINK, WORKFLOW_CHANGE, WORKFLOW_COUNTS, {
      items: { PutItem: ['CLAIM#'], DeleteItem: ['CLAIM#'] },
    }),
  },
  // ---- Read side (API guide §13). Every read: the acting user `uid` (role 9 or a permission on the task;
  // shared/domain/tasks/access.ts): a signed-in person, or an app holding the grant `read` (`admin`
  // for the dead letters) naming the uid. Each group below is added by its own change.
  // [read:tasks-workflows]
  {
    method: 'GET',
    path: '/alarmtask/list',
    handler: 'functions/http/alarmtask/list-tasks.ts',
    auth: 'reader',
    access: access(READER_AUTH, {
      items: { GetItem: ['USER#'], BatchGetItem: ['DEPT#', 'TAG#', 'TASK#'] },
      indexQueries: ['gsi1', 'gsi2'],
    }),
  },
  {
    method: 'GET',
    path: '/workflow/list',
    handler: 'functions/http/workflow/list-workflows.ts',
    auth: 'reader',
    access: access(READER_AUTH, TASK_READER, {
      items: { GetItem: ['DEPT#'], BatchGetItem: ['USER#'] },
      indexQueries: ['gsi2'],
    }),
  },
  {
    method: 'GET',
    path: '/workflow/counts',
    handler: 'functions/http/workflow/count-workflows.ts',
    auth: 'reader',
    access: access(READER_AUTH, {
      items: { GetItem: ['USER#'], BatchGetItem: ['TASK#', 'WFCOUNT#'] },
      indexQueries: ['gsi1'],
    }),
  },
  // [read:deliveries]
  {
    method: 'GET',
    path: '/alarmtask/deliveries',
    handler: 'functions/http/alarmtask/list-deliveries.ts',
    auth: 'reader',
    access: access(READER_AUTH, TASK_READER, {
      items: { Query: ['ALOG#', 'WHLOG#'] },
      indexQueries: ['gsi1'],
    }),
  },
  {
    // Calls the task's webhook and records the attempt.
    method: 'POST',
    path: '/alarmtask/webhook/test',
    handler: 'functions/http/alarmtask/test-webhook.ts',
    auth: 'reader',
    access: access(READER_AUTH, TASK_READER, { items: { BatchWriteItem: ['WHEVT#', 'WHLOG#'] } }),
  },
  {
    method: 'POST',
    path: '/alarmtask/template/preview',
    handler: 'functions/http/alarmtask/preview-template.ts',
    auth: 'reader',
    access: access(READER_AUTH, TASK_READER, { items: { GetItem: ['ALARM#', 'TPL#'] } }),
  },
  {
    method: 'GET',
    path: '/delivery/dlq',
    handler: 'functions/http/delivery/list-dead-letters.ts',
    auth: 'admin',
    access: access(DEAD_LETTERS, { items: { GetItem: ['ALARM#'], Query: ['NJOB#', 'WHEVT#'] } }),
  },
  {
    // Writes: the scheduler's dead due work (queue `due`) is put back as due work.
    method: 'POST',
    path: '/delivery/dlq/redrive',
    handler: 'functions/http/delivery/redrive-dead-letters.ts',
    auth: 'admin',
    access: access(DEAD_LETTERS, {
      items: {
        GetItem: ['DUEDEAD#', 'NJOB#'],
        Query: ['WHEVT#'],
        PutItem: ['DUE#'],
        DeleteItem: ['DUEDEAD#'],
      },
      queues: {
        SendMessage: ['alarm', 'notify', 'webhook'],
        DeleteMessage: ['alarm-dlq', 'notify-dlq', 'webhook-dlq'],
      },
    }),
  },
  // [read:alarms]
  {
    method: 'PUT',
    path: '/alarmtask/status',
    handler: 'functions/http/alarmtask/status-task.ts',
    auth: 'reader',
    access: access(READER_AUTH, TASK_READER, TASK_STATUS),
  },
  ...(
    [
      ['/alarmtask/view', 'view-task', TASK_DETAIL],
      ['/alarmtask/alarms', 'list-alarms', access(ALARM_LOG, { items: { BatchGetItem: ['ALARM#'] } })],
      ['/alarmtask/alarms/stats', 'alarm-stats', ALARM_LOG],
      ['/alarmtask/alarm', 'show-alarm', access(ALARM_LOG, { items: { GetItem: ['ALARM#'] } })],
      [
        '/alarmtask/alarm/trace',
        'trace-alarm',
        // The alarm, who it named (the names of the schedules its messages asked), its webhook
        // attempts, notification jobs and workflow.
        access(ALARM_LOG, WEBHOOK_ATTEMPTS, {
          items: {
            GetItem: ['ALARM#', 'DEPT#', 'WFALARM#'],
            Query: ['NJOB#', 'WF#'],
            BatchGetItem: ['GROUP#', 'NJOB#', 'SCHEDULE#', 'USER#'],
          },
        }),
      ],
    ] as const
  ).map(
    ([path, file, own]): RouteDef => ({
      method: 'GET',
      path,
      handler: `functions/http/alarmtask/${file}.ts`,
      auth: 'reader',
      access: access(READER_AUTH, TASK_READER, own),
    }),
  ),
  // [read:replay] What-if replays (API guide §13.6): small windows answer at once, larger ones run on
  // the replay queue and are read back.
  {
    method: 'POST',
    path: '/alarmtask/replay',
    handler: 'functions/http/alarmtask/start-replay.ts',
    auth: 'reader',
    access: access(READER_AUTH, TASK_READER, REPLAY_RUN, { queues: { SendMessage: ['replay'] } }),
  },
  {
    method: 'GET',
    path: '/alarmtask/replay',
    handler: 'functions/http/alarmtask/show-replay.ts',
    auth: 'reader',
    access: access(READER_AUTH, TASK_READER, { items: { GetItem: ['REPLAY#'] } }),
  },
  // [oncall] On-call schedules (API guide §18): a signed-in person, or an app holding the grant
  // `read` acting as `uid`; changes need the schedule's rw permission (schedules/access.ts).
  {
    method: 'POST',
    path: '/schedule/store',
    handler: 'functions/http/schedule/store-schedule.ts',
    fn: 'oncall',
    auth: 'reader',
    // The users, department and coverage task it names; a new id; the schedule and its first
    // configuration; its coverage check as due work; then shown.
    access: access(SCHEDULE_READ, {
      items: {
        GetItem: ['DEPT#', 'TASK#'],
        BatchGetItem: ['USER#'],
        UpdateItem: ['COUNTER#'],
        PutItem: ['DUE#', 'SCHEDULE#'],
      },
    }),
  },
  {
    method: 'GET',
    path: '/schedule/show',
    handler: 'functions/http/schedule/show-schedule.ts',
    fn: 'oncall',
    auth: 'reader',
    access: access(SCHEDULE_READ, { items: { GetItem: ['DEPT#'], BatchGetItem: ['USER#'] } }),
  },
  {
    method: 'PUT',
    path: '/schedule/update',
    handler: 'functions/http/schedule/update-schedule.ts',
    fn: 'oncall',
    auth: 'reader',
    // As store, then one transaction: the schedule's fields, the new configuration, the pending
    // configurations it replaces.
    access: access(SCHEDULE_READ, {
      items: {
        GetItem: ['DEPT#', 'TASK#'],
        BatchGetItem: ['USER#'],
        UpdateItem: ['SCHEDULE#'],
        PutItem: ['DUE#', 'SCHEDULE#'],
        DeleteItem: ['SCHEDULE#'],
      },
    }),
  },
  {
    method: 'DELETE',
    path: '/schedule',
    handler: 'functions/http/schedule/delete-schedule.ts',
    fn: 'oncall',
    auth: 'reader',
    // The schedule (unless a task names it: the reference index), then its collection in batches.
    access: access(SCHEDULE_READ, {
      items: { DeleteItem: ['SCHEDULE#'], BatchWriteItem: ['SCHEDULE#'], PutItem: ['DUE#'] },
    }),
  },
  {
    method: 'GET',
    path: '/schedule/list',
    handler: 'functions/http/schedule/list-schedules.ts',
    fn: 'oncall',
    auth: 'reader',
    access: access(READER_AUTH, { indexQueries: ['gsi1'] }),
  },
  {
    method: 'POST',
    path: '/schedule/override',
    handler: 'functions/http/schedule/add-override.ts',
    fn: 'oncall',
    auth: 'reader',
    // The user; the next override id (the schedule's counter); the override, while the schedule exists.
    access: access(SCHEDULE_READ, {
      items: {
        BatchGetItem: ['USER#'],
        UpdateItem: ['SCHEDULE#'],
        ConditionCheckItem: ['SCHEDULE#'],
        PutItem: ['DUE#', 'SCHEDULE#'],
      },
    }),
  },
  {
    method: 'DELETE',
    path: '/schedule/override',
    handler: 'functions/http/schedule/delete-override.ts',
    fn: 'oncall',
    auth: 'reader',
    // Removed, or moved to end now (its key holds its end).
    access: access(SCHEDULE_READ, { items: { DeleteItem: ['SCHEDULE#'], PutItem: ['DUE#', 'SCHEDULE#'] } }),
  },
  {
    method: 'GET',
    path: '/schedule/oncall',
    handler: 'functions/http/schedule/show-oncall.ts',
    fn: 'oncall',
    auth: 'reader',
    access: access(SCHEDULE_READ, { items: { BatchGetItem: ['USER#'] } }),
  },
  {
    method: 'GET',
    path: '/schedule/final',
    handler: 'functions/http/schedule/show-final.ts',
    fn: 'oncall',
    auth: 'reader',
    access: access(SCHEDULE_READ, { items: { BatchGetItem: ['USER#'] } }),
  },
  {
    method: 'POST',
    path: '/schedule/preview',
    handler: 'functions/http/schedule/preview-schedule.ts',
    fn: 'oncall',
    auth: 'reader',
    // The people and the coverage task it names must exist, as for an update.
    access: access(SCHEDULE_READ, { items: { BatchGetItem: ['USER#'], GetItem: ['TASK#'] } }),
  },
  {
    method: 'PUT',
    path: '/schedule/ical',
    handler: 'functions/http/schedule/ical-key.ts',
    fn: 'oncall',
    auth: 'reader',
    access: access(SCHEDULE_READ, { items: { UpdateItem: ['SCHEDULE#'] } }),
  },
  {
    // Authenticated by the feed key alone: the schedule (the key's hash), its shifts, the people's names.
    method: 'GET',
    path: '/schedule/ical.ics',
    handler: 'functions/http/schedule/ical-feed.ts',
    fn: 'oncall',
    auth: 'none',
    access: { items: { GetItem: ['SCHEDULE#'], Query: ['SCHEDULE#'], BatchGetItem: ['USER#'] } },
  },
  {
    method: 'GET',
    path: '/alarmtask/oncall',
    handler: 'functions/http/alarmtask/oncall-task.ts',
    fn: 'oncall',
    auth: 'reader',
    // The task, then each schedule its receivers name: its name, versions and overrides; the people
    // on call now.
    access: access(READER_AUTH, TASK_READER, ONCALL_RESOLVE, {
      items: { BatchGetItem: ['SCHEDULE#', 'USER#'] },
    }),
  },
  // [read:docs]
  // The API's OpenAPI document and its reference page (npm run gen:openapi), public like /health.
  {
    method: 'GET',
    path: '/openapi.json',
    handler: 'functions/http/docs/get-openapi.ts',
    auth: 'none',
    access: {},
    head: true,
  },
  {
    method: 'GET',
    path: '/docs',
    handler: 'functions/http/docs/get-reference.ts',
    auth: 'none',
    access: {},
    head: true,
  },
  // [console] (docs/console.md)
  // The web console: one self-contained page from the API itself (same origin: no CORS, no bucket or
  // distribution); its calls carry the signed-in person's session cookie.
  {
    method: 'GET',
    path: '/console',
    handler: 'functions/http/console/get-console.ts',
    auth: 'none',
    access: {},
    head: true,
  },
  // [sign-in] People sign in to the console (docs/sign-in.md): account and password, or single
  // sign-on through OpenID Connect; the session is an HttpOnly cookie.
  {
    method: 'POST',
    path: '/auth/signin',
    handler: 'functions/http/auth/sign-in.ts',
    auth: 'none',
    access: SIGN_IN,
  },
  {
    method: 'GET',
    path: '/auth/session',
    handler: 'functions/http/auth/get-session.ts',
    auth: 'none',
    // Refreshes the session's last use (at most once a minute).
    access: PERSON_AUTH,
  },
  {
    method: 'POST',
    path: '/auth/signout',
    handler: 'functions/http/auth/sign-out.ts',
    auth: 'person',
    // Ends the session, or every session of the person (their credential's sign-out time).
    access: access(PERSON_AUTH, { items: { DeleteItem: ['SESSION#'], UpdateItem: ['USER#'] } }),
  },
  {
    method: 'PUT',
    path: '/auth/password',
    handler: 'functions/http/auth/change-password.ts',
    auth: 'person',
    // The current password, the account's tries, the new password (every session ends) and a new
    // session for this browser.
    access: access(PERSON_AUTH, {
      items: {
        GetItem: ['SIGNIN#', 'USER#'],
        UpdateItem: ['SIGNIN#', 'USER#'],
        PutItem: ['SESSION#'],
      },
    }),
  },
  {
    method: 'GET',
    path: '/auth/oidc/start',
    handler: 'functions/http/auth/oidc-start.ts',
    auth: 'none',
    access: access(SSO_LOGIN, { items: { PutItem: ['OIDC#'] } }),
  },
  {
    method: 'GET',
    path: '/auth/oidc/callback',
    handler: 'functions/http/auth/oidc-callback.ts',
    auth: 'none',
    // The login in flight taken once; the person bound to the token's identity, or the person of the
    // verified e-mail bound to it now (link and credential, one transaction); their credential (a
    // deactivated person is refused); a new session.
    access: access(SSO_LOGIN, {
      items: {
        DeleteItem: ['OIDC#'],
        GetItem: ['SSOID#', 'USER#'],
        PutItem: ['SESSION#', 'SSOID#'],
        UpdateItem: ['USER#'],
      },
      indexQueries: ['gsi2'],
    }),
  },
  // Local runtime only: the test clock.
  {
    method: 'GET',
    path: '/_local/clock',
    handler: 'shared/local/clock-routes.ts',
    auth: 'none',
    access: {},
    localOnly: true,
  },
  {
    method: 'POST',
    path: '/_local/clock',
    handler: 'shared/local/clock-routes.ts',
    auth: 'none',
    access: {},
    localOnly: true,
  },
];

/** The entry a route runs in: its group's dispatching entry, or its own handler. */
export function routeEntry(route: Pick<RouteDef, 'handler' | 'fn'>): string {
  return route.fn ? functionGroups[route.fn].handler : route.handler;
}
