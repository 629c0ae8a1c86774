/**
 * The one description of the service's resources. The CDK stack (infra/stack.ts) and the local
 * runtime (shared/local) both read these definitions, so the deployed API and `npm start` can never
 * disagree about a route, a queue or the table layout. Pure data: no runtime code is imported here.
 */

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
export type TableAccess = 'read' | 'write' | 'none';
export type QueueName = 'alarm' | 'webhook' | 'notify';

/**
 * Routes deployed together in one Lambda (RouteDef.fn): its entry dispatches on the event's `routeKey`
 * to each route's own handler module, and its access is the union of its routes' access. The alarm
 * intake routes are two such functions, so that their reserved concurrency stays a small sum
 * (docs/aws-operations.md, "Concurrency"). The local runtime serves the routes through the same entry.
 */
export const functionGroups = {
  /** POST /alarm/report and /alarm/test: senders that sign with the task token. */
  'alarm-report': { handler: 'functions/alarm/report-function.ts' },
  /** The monitor adapters and the heartbeat. */
  'alarm-monitors': { handler: 'functions/alarm/monitors-function.ts' },
} as const;
export type FunctionGroup = keyof typeof functionGroups;

export interface RouteDef {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  /** Handler entry, relative to the project root, exporting `handler`. */
  handler: string;
  auth: AuthKind;
  table: TableAccess;
  /** Queues the handler publishes to. */
  publishes?: QueueName[];
  /** Only mounted by the local runtime (never deployed). */
  localOnly?: boolean;
  /** The function group serving this route (functionGroups); without it the route has its own Lambda. */
  fn?: FunctionGroup;
  /**
   * A GET route that also answers HEAD (its function, without the body). API Gateway HTTP APIs match
   * a route's method exactly: a GET route alone leaves HEAD to the not-found default route.
   */
  head?: true;
  /**
   * The queues' dead-letter queues: `read` lists them without consuming (receive and change the
   * visibility of their messages), `redrive` also deletes from them and sends to the source queues.
   */
  deadLetters?: 'read' | 'redrive';
}

export const routes: RouteDef[] = [
  {
    method: 'GET',
    path: '/health',
    handler: 'functions/http/health/get-health.ts',
    auth: 'none',
    table: 'none',
    head: true,
  },
  // Directory
  {
    method: 'GET',
    path: '/department/simple',
    handler: 'functions/http/department/list-departments.ts',
    auth: 'app|person',
    table: 'read',
  },
  {
    method: 'GET',
    path: '/department/show',
    handler: 'functions/http/department/show-department.ts',
    auth: 'app',
    table: 'read',
  },
  {
    method: 'GET',
    path: '/user/profile',
    handler: 'functions/http/user/show-profile.ts',
    auth: 'app',
    table: 'read',
  },
  {
    method: 'PUT',
    path: '/user/updatephone',
    handler: 'functions/http/user/update-phone.ts',
    auth: 'app',
    table: 'write',
  },
  // Alarm tasks
  {
    method: 'POST',
    path: '/alarmtask/store',
    handler: 'functions/http/alarmtask/store-task.ts',
    auth: 'app',
    table: 'write',
    publishes: ['webhook'],
  },
  {
    method: 'GET',
    path: '/alarmtask/show',
    handler: 'functions/http/alarmtask/show-task.ts',
    auth: 'app+task',
    table: 'read',
  },
  {
    method: 'PUT',
    path: '/alarmtask/update',
    handler: 'functions/http/alarmtask/update-task.ts',
    auth: 'app+task',
    table: 'write',
    publishes: ['webhook'],
  },
  {
    method: 'PUT',
    path: '/alarmtask/updatefields',
    handler: 'functions/http/alarmtask/update-task-fields.ts',
    auth: 'app+task',
    table: 'write',
    publishes: ['webhook'],
  },
  {
    method: 'DELETE',
    path: '/alarmtask',
    handler: 'functions/http/alarmtask/delete-task.ts',
    auth: 'app+task',
    table: 'write',
  },
  {
    method: 'PUT',
    path: '/alarmtask/stop',
    handler: 'functions/http/alarmtask/stop-task.ts',
    auth: 'app+task',
    table: 'write',
  },
  {
    method: 'PUT',
    path: '/alarmtask/start',
    handler: 'functions/http/alarmtask/start-task.ts',
    auth: 'app+task',
    table: 'write',
  },
  {
    method: 'PUT',
    path: '/alarmtask/pause',
    handler: 'functions/http/alarmtask/pause-task.ts',
    auth: 'app+task',
    table: 'write',
  },
  {
    method: 'PUT',
    path: '/alarmtask/intake',
    handler: 'functions/http/alarmtask/intake-token.ts',
    auth: 'app+task',
    table: 'write',
  },
  {
    method: 'PUT',
    path: '/alarmtask/ratelimit',
    handler: 'functions/http/alarmtask/rate-limit-task.ts',
    auth: 'app+task',
    table: 'write',
  },
  {
    method: 'PUT',
    path: '/alarmtask/retention',
    handler: 'functions/http/alarmtask/retention-task.ts',
    auth: 'app+task',
    table: 'write',
  },
  {
    method: 'PUT',
    path: '/alarmtask/heartbeat',
    handler: 'functions/http/alarmtask/heartbeat-task.ts',
    auth: 'app+task',
    table: 'write',
  },
  // Alarm ingestion
  {
    method: 'POST',
    path: '/alarm/report',
    handler: 'functions/alarm/report-alarm.ts',
    fn: 'alarm-report',
    auth: 'alarm',
    // Reads the task; writes only the opt-in idempotency receipt of a client-chosen uuid.
    table: 'write',
    publishes: ['alarm'],
  },
  {
    method: 'POST',
    path: '/alarm/test',
    handler: 'functions/alarm/test-alarm.ts',
    fn: 'alarm-report',
    auth: 'alarm',
    table: 'read',
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
      table: 'write',
      publishes: ['alarm'],
    }),
  ),
  ...(['GET', 'POST'] as const).map(
    (method): RouteDef => ({
      method,
      path: '/alarm/heartbeat',
      handler: 'functions/alarm/heartbeat.ts',
      fn: 'alarm-monitors',
      auth: 'alarm',
      table: 'write',
      publishes: ['alarm'],
    }),
  ),
  // Workflows
  {
    method: 'GET',
    path: '/workflow/show',
    handler: 'functions/http/workflow/show-workflow.ts',
    auth: 'app|person',
    table: 'read',
  },
  ...(['claim', 'assign', 'processed', 'reactive', 'close'] as const).map(
    (op): RouteDef => ({
      method: 'PUT',
      path: `/workflow/${op}`,
      handler: `functions/http/workflow/${op}-workflows.ts`,
      auth: 'app|person',
      table: 'write',
      publishes: ['webhook', 'notify'],
    }),
  ),
  // ---- Read side (API guide §13). Every read: the acting user `uid` (role 9 or a permission on the task;
  // shared/domain/tasks/access.ts): a signed-in person, or an app holding the grant `read` (`admin`
  // for the dead letters) naming the uid. Each group below is added by its own change.
  // [read:tasks-workflows]
  {
    method: 'GET',
    path: '/alarmtask/list',
    handler: 'functions/http/alarmtask/list-tasks.ts',
    auth: 'reader',
    table: 'read',
  },
  {
    method: 'GET',
    path: '/workflow/list',
    handler: 'functions/http/workflow/list-workflows.ts',
    auth: 'reader',
    table: 'read',
  },
  {
    method: 'GET',
    path: '/workflow/counts',
    handler: 'functions/http/workflow/count-workflows.ts',
    auth: 'reader',
    table: 'read',
  },
  // [read:deliveries]
  {
    method: 'GET',
    path: '/alarmtask/deliveries',
    handler: 'functions/http/alarmtask/list-deliveries.ts',
    auth: 'reader',
    table: 'read',
  },
  {
    // Calls the task's webhook and records the attempt.
    method: 'POST',
    path: '/alarmtask/webhook/test',
    handler: 'functions/http/alarmtask/test-webhook.ts',
    auth: 'reader',
    table: 'write',
  },
  {
    method: 'POST',
    path: '/alarmtask/template/preview',
    handler: 'functions/http/alarmtask/preview-template.ts',
    auth: 'reader',
    table: 'read',
  },
  {
    method: 'GET',
    path: '/delivery/dlq',
    handler: 'functions/http/delivery/list-dead-letters.ts',
    auth: 'admin',
    table: 'read',
    deadLetters: 'read',
  },
  {
    // Writes: the scheduler's dead due work (queue `due`) is put back as due work.
    method: 'POST',
    path: '/delivery/dlq/redrive',
    handler: 'functions/http/delivery/redrive-dead-letters.ts',
    auth: 'admin',
    table: 'write',
    deadLetters: 'redrive',
  },
  // [read:alarms]
  {
    method: 'PUT',
    path: '/alarmtask/status',
    handler: 'functions/http/alarmtask/status-task.ts',
    auth: 'reader',
    table: 'write',
  },
  ...(
    [
      ['/alarmtask/view', 'view-task'],
      ['/alarmtask/alarms', 'list-alarms'],
      ['/alarmtask/alarms/stats', 'alarm-stats'],
      ['/alarmtask/alarm', 'show-alarm'],
      ['/alarmtask/alarm/trace', 'trace-alarm'],
    ] as const
  ).map(
    ([path, file]): RouteDef => ({
      method: 'GET',
      path,
      handler: `functions/http/alarmtask/${file}.ts`,
      auth: 'reader',
      table: 'read',
    }),
  ),
  // [read:docs]
  // The API's OpenAPI document and its reference page (npm run gen:openapi), public like /health.
  {
    method: 'GET',
    path: '/openapi.json',
    handler: 'functions/http/docs/get-openapi.ts',
    auth: 'none',
    table: 'none',
    head: true,
  },
  {
    method: 'GET',
    path: '/docs',
    handler: 'functions/http/docs/get-reference.ts',
    auth: 'none',
    table: 'none',
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
    table: 'none',
    head: true,
  },
  // [sign-in] People sign in to the console (docs/sign-in.md): account and password, or single
  // sign-on through OpenID Connect; the session is an HttpOnly cookie.
  {
    method: 'POST',
    path: '/auth/signin',
    handler: 'functions/http/auth/sign-in.ts',
    auth: 'none',
    table: 'write',
  },
  {
    method: 'GET',
    path: '/auth/session',
    handler: 'functions/http/auth/get-session.ts',
    auth: 'none',
    // Refreshes the session's last use (at most once a minute).
    table: 'write',
  },
  {
    method: 'POST',
    path: '/auth/signout',
    handler: 'functions/http/auth/sign-out.ts',
    auth: 'person',
    table: 'write',
  },
  {
    method: 'PUT',
    path: '/auth/password',
    handler: 'functions/http/auth/change-password.ts',
    auth: 'person',
    table: 'write',
  },
  {
    method: 'GET',
    path: '/auth/oidc/start',
    handler: 'functions/http/auth/oidc-start.ts',
    auth: 'none',
    table: 'write',
  },
  {
    method: 'GET',
    path: '/auth/oidc/callback',
    handler: 'functions/http/auth/oidc-callback.ts',
    auth: 'none',
    table: 'write',
  },
  // Local runtime only: the test clock.
  {
    method: 'GET',
    path: '/_local/clock',
    handler: 'shared/local/clock-routes.ts',
    auth: 'none',
    table: 'none',
    localOnly: true,
  },
  {
    method: 'POST',
    path: '/_local/clock',
    handler: 'shared/local/clock-routes.ts',
    auth: 'none',
    table: 'none',
    localOnly: true,
  },
];

/** The entry a route runs in: its group's dispatching entry, or its own handler. */
export function routeEntry(route: Pick<RouteDef, 'handler' | 'fn'>): string {
  return route.fn ? functionGroups[route.fn].handler : route.handler;
}

export interface QueueDef {
  name: QueueName;
  /**
   * Seconds a received message stays invisible: six times the consumer's timeout (AWS's advice for
   * SQS event sources, which retry throttled invocations within the visibility window).
   */
  visibilityTimeoutSeconds: number;
  /** Receives before a message moves to the dead-letter queue. */
  maxReceiveCount: number;
  consumer: string;
  batchSize: number;
  /**
   * Whether the local poller gathers a partial batch for a moment (its batching window): not for the
   * webhook queue, whose messages are already bundles of a producer's events.
   */
  gather: boolean;
  /** Consumer Lambda timeout. */
  timeoutSeconds: number;
  publishes: QueueName[];
}

export const queues: QueueDef[] = [
  {
    name: 'alarm',
    visibilityTimeoutSeconds: 180,
    maxReceiveCount: 5,
    consumer: 'functions/queue/process-alarm.ts',
    batchSize: 25,
    gather: true,
    timeoutSeconds: 30,
    // The alarm queue itself: alarms of a metric other consumers keep committing are handed back.
    publishes: ['alarm', 'webhook', 'notify'],
  },
  {
    name: 'webhook',
    visibilityTimeoutSeconds: 60,
    // 1 first attempt + 6 retries (API guide §12.5); the 7th failure moves the event to the DLQ.
    maxReceiveCount: 7,
    consumer: 'functions/queue/deliver-webhook.ts',
    batchSize: 10,
    gather: false,
    timeoutSeconds: 10,
    publishes: [],
  },
  {
    name: 'notify',
    visibilityTimeoutSeconds: 180,
    maxReceiveCount: 7,
    consumer: 'functions/queue/send-notification.ts',
    batchSize: 10,
    gather: true,
    timeoutSeconds: 30,
    publishes: [],
  },
];

export const schedule = {
  handler: 'functions/schedule/run-due-work.ts',
  rateMinutes: 1,
  timeoutSeconds: 55,
  publishes: ['alarm', 'webhook', 'notify'] as QueueName[],
};

/**
 * The single table. Generic keys; sparse GSIs for reverse lookups: gsi1, and gsi2 for the listings
 * that need a second entry per item (tasks by name beside gsi1's by pinyin, workflows by task and
 * status). A deployed table gains one GSI per update (DynamoDB's rule): add them one release apart.
 */
export const table = {
  partitionKey: 'pk',
  sortKey: 'sk',
  ttlAttribute: 'ttl',
  globalSecondaryIndexes: [
    { indexName: 'gsi1', partitionKey: 'gsi1pk', sortKey: 'gsi1sk' },
    { indexName: 'gsi2', partitionKey: 'gsi2pk', sortKey: 'gsi2sk' },
  ],
} as const;
