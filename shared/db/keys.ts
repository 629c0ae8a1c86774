/**
 * Every key string of the table is built here and nowhere else. See KEY-DESIGN.md for the entities
 * and access patterns these keys serve.
 */
const pad = (n: number, width = 12) => String(n).padStart(width, '0');

/** The UTC day (days since the epoch) a delivery log item of `atMs` belongs to. */
export const webhookLogDayOf = (atMs: number) => Math.floor(atMs / 86_400_000);

export const keys = {
  // Directory
  businessUnit: (id: number) => ({ pk: `BU#${id}`, sk: 'BU' }),
  department: (id: number) => ({ pk: `DEPT#${id}`, sk: 'DEPT' }),
  /** All departments live in one item collection of the directory index: list without a scan. */
  departmentListing: (id: number) => ({ gsi1pk: 'DEPTS', gsi1sk: `DEPT#${pad(id)}` }),
  departmentsIndex: () => ({ gsi1pk: 'DEPTS' }),
  user: (uid: number) => ({ pk: `USER#${uid}`, sk: 'USER' }),
  /**
   * A user's sign-in index entries, on the user item: gsi1 by account name, gsi2 by e-mail (both
   * lower-cased; sparse: absent when the directory gives none). Sign-in and single sign-on find the
   * person with one Query.
   */
  userSignInKeys: (u: { uid: number; user?: string; email?: string }) => ({
    ...(u.user ? { gsi1pk: keys.userByAccount(u.user), gsi1sk: `USER#${pad(u.uid)}` } : {}),
    ...(u.email ? { gsi2pk: keys.userByEmail(u.email), gsi2sk: `USER#${pad(u.uid)}` } : {}),
  }),
  userByAccount: (account: string) => `ACCOUNT#${account.trim().toLowerCase()}`,
  userByEmail: (email: string) => `EMAIL#${email.trim().toLowerCase()}`,
  /** A person's password hash and sign-out-everywhere stamp, beside the user item (import keeps it). */
  userCredential: (uid: number) => ({ pk: `USER#${uid}`, sk: 'CREDENTIAL' }),
  alarmGroup: (id: number) => ({ pk: `GROUP#${id}`, sk: 'GROUP' }),
  tag: (id: number) => ({ pk: `TAG#${id}`, sk: 'TAG' }),
  template: (id: number) => ({ pk: `TPL#${id}`, sk: 'TPL' }),
  app: (id: number) => ({ pk: `APP#${id}`, sk: 'APP' }),
  /** A nonce of an app's request-bound signature, taken once (kept until its time window ends). */
  appNonce: (appId: number, nonce: string) => ({ pk: `NONCE#${appId}#${nonce}`, sk: 'NONCE' }),

  // Sign-in (shared/domain/auth): sessions by the SHA-256 of their id (the id itself is never
  // stored), failed-sign-in counters by subject, and the OpenID Connect logins in flight by the
  // SHA-256 of their state. All carry a `ttl`.
  session: (idHash: string) => ({ pk: `SESSION#${idHash}`, sk: 'SESSION' }),
  signInThrottle: (subject: string) => ({ pk: `SIGNIN#${subject}`, sk: 'THROTTLE' }),
  /** An account's counter of tries from one source address, in the account's partition. */
  signInThrottleFrom: (subject: string, address: string) => ({
    pk: `SIGNIN#${subject}`,
    sk: `FROM#${address}`,
  }),
  /**
   * A person's link to their single sign-on identity: the provider's issuer and subject (`sub`),
   * by their SHA-256 (`iss` + newline + `sub`), taken once.
   */
  ssoIdentity: (identityHash: string) => ({ pk: `SSOID#${identityHash}`, sk: 'SSOID' }),
  oidcLogin: (stateHash: string) => ({ pk: `OIDC#${stateHash}`, sk: 'LOGIN' }),

  // Claim links (shared/domain/claims): a link's use, by its nonce (a token itself is never stored),
  // beside the link's rate limit; and the rate limit of a source address. All carry a `ttl`.
  claimLinkUse: (nonce: string) => ({ pk: `CLAIM#link#${nonce}`, sk: 'USED' }),
  claimThrottle: (subject: string) => ({ pk: `CLAIM#${subject}`, sk: 'THROTTLE' }),

  // Counters that allocate ids.
  counter: (name: 'task' | 'workflow' | 'history' | 'schedule') => ({ pk: `COUNTER#${name}`, sk: 'COUNTER' }),

  // Alarm tasks
  task: (id: number) => ({ pk: `TASK#${id}`, sk: 'TASK' }),
  taskName: (name: string) => ({ pk: `TASKNAME#${name}`, sk: 'TASKNAME' }),
  /**
   * A task's intake token (its SHA-256), beside the task item and read on every use, never cached: a
   * new token replaces the old one at once.
   */
  taskIntake: (id: number) => ({ pk: `TASK#${id}`, sk: 'INTAKE' }),
  /** A task's heartbeat state (last alarm or ping, a miss raised): beside the task item. */
  taskHeartbeat: (id: number) => ({ pk: `TASK#${id}`, sk: 'HEARTBEAT' }),
  /** Permission of one user on one task; listed per user through gsi1. */
  taskPermission: (taskId: number, uid: number) => ({ pk: `TASK#${taskId}`, sk: `PERM#${uid}` }),
  taskPermissionByUser: (uid: number, taskId: number) => ({
    gsi1pk: `USERPERM#${uid}`,
    gsi1sk: `TASK#${pad(taskId)}`,
  }),
  permissionsOfUser: (uid: number) => ({ gsi1pk: `USERPERM#${uid}` }),
  taskPermissionPrefix: () => 'PERM#',
  /**
   * The task listing (GET /alarmtask/list): every task in one partition of each index, gsi1 sorted by
   * its lower-cased pinyin, gsi2 by its lower-cased name (a prefix search on either is one range).
   */
  taskListing: (t: { id: number; name: string; pinyin: string }) => ({
    gsi1pk: TASK_LISTING,
    gsi1sk: keys.taskListingSk(t.pinyin, t.id),
    gsi2pk: TASK_LISTING,
    gsi2sk: keys.taskListingSk(t.name, t.id),
  }),
  taskListingPartition: () => TASK_LISTING,
  /** `<text lower-cased>#<id, 12 digits>`: unique per task, and a prefix of the text is a key prefix. */
  taskListingSk: (text: string, id: number) => `${text.toLowerCase()}#${pad(id)}`,

  // What-if replays: a replay's result (and, while it runs on its queue, its request), with a `ttl`.
  replay: (id: string) => ({ pk: `REPLAY#${id}`, sk: 'REPLAY' }),
  // On-call schedules (shared/domain/schedules/repository.ts): one item collection per schedule.
  /** The schedule (name, department, permissions, reference count, calendar feed key hash). */
  schedule: (id: number) => ({ pk: `SCHEDULE#${id}`, sk: 'SCHEDULE' }),
  schedulePartition: (id: number) => `SCHEDULE#${id}`,
  /** Every schedule in one partition of gsi1, by its lower-cased name (the listing). */
  scheduleListing: (s: { id: number; name: string }) => ({
    gsi1pk: SCHEDULE_LISTING,
    gsi1sk: `${s.name.toLowerCase()}#${pad(s.id)}`,
  }),
  scheduleListingPartition: () => SCHEDULE_LISTING,
  /** One configuration, ordered by the instant it takes effect from, then its version. */
  scheduleVersion: (id: number, effectiveFrom: number, version: number) => ({
    pk: `SCHEDULE#${id}`,
    sk: `VERSION#${pad(effectiveFrom, 10)}#${pad(version, 6)}`,
  }),
  scheduleVersionPrefix: () => 'VERSION#',
  /** The greatest version sort key of instants up to `at` (inclusive). */
  scheduleVersionUntil: (at: number) => `VERSION#${pad(at, 10)}#~`,
  /** One override, ordered by its end: those still running after an instant are one range. */
  scheduleOverride: (id: number, end: number, overrideId: number) => ({
    pk: `SCHEDULE#${id}`,
    sk: `OVERRIDE#${pad(end, 10)}#${pad(overrideId)}`,
  }),
  /** The smallest override sort key ending after `at`. */
  scheduleOverrideAfter: (at: number) => `OVERRIDE#${pad(at + 1, 10)}#`,
  scheduleOverrideLast: () => 'OVERRIDE#~',
  /** A task whose receivers name the schedule (the reference index, kept by task writes). */
  scheduleTaskRef: (id: number, taskId: number) => ({ pk: `SCHEDULE#${id}`, sk: `TASKREF#${pad(taskId)}` }),
  scheduleTaskRefPrefix: () => 'TASKREF#',
  /** The coverage gaps raised as alarms and not yet recovered. */
  scheduleGaps: (id: number) => ({ pk: `SCHEDULE#${id}`, sk: 'GAPS' }),

  // Workflows: the workflow item and its pipeline records share one item collection `WF#<id>`.
  workflow: (id: number) => ({ pk: `WF#${id}`, sk: 'WF' }),
  workflowCollection: (id: number) => `WF#${id}`,
  /** A pipeline record of an operation (ordered by time, then by the workflow version it produced). */
  workflowPipeline: (id: number, createdAt: number, version: number) => ({
    pk: `WF#${id}`,
    sk: `PIPE#${pad(createdAt, 10)}#${pad(version, 6)}`,
  }),
  /** A reminder's pipeline record: one per (reminder, due time), so a re-run cannot record it twice. */
  workflowRemindPipeline: (id: number, dueAt: number, index: number) => ({
    pk: `WF#${id}`,
    sk: `PIPE#${pad(dueAt, 10)}#R${pad(index, 3)}`,
  }),
  workflowPipelinePrefix: () => 'PIPE#',
  /** Sparse: present on a workflow only while it is open (pending or processing). */
  workflowOpenByMetric: (taskId: number, metric: string, id: number) => ({
    gsi1pk: `WFOPEN#${taskId}#${metric}`,
    gsi1sk: `WF#${pad(id)}`,
  }),
  openWorkflowsOfMetric: (taskId: number, metric: string) => ({ gsi1pk: `WFOPEN#${taskId}#${metric}` }),
  /**
   * A task's workflows by status, newest first (GET /workflow/list): gsi2 `WFTASK#<task>#<status>`,
   * sorted by creation time then id. A status change moves the entry to the new status's partition.
   */
  workflowOfTask: (taskId: number, status: number, createdAt: number, id: number) => ({
    gsi2pk: keys.workflowsOfTask(taskId, status),
    gsi2sk: keys.workflowOfTaskSk(createdAt, id),
  }),
  workflowsOfTask: (taskId: number, status: number) => `WFTASK#${taskId}#${status}`,
  workflowOfTaskSk: (createdAt: number, id: number) => `${pad(createdAt, 10)}#${pad(id)}`,
  /** A task's workflow counts by status, one of WF_COUNT_SHARDS items (shard = hash of the workflow id). */
  workflowCount: (taskId: number, shard: number) => ({ pk: `WFCOUNT#${taskId}#${shard}`, sk: 'WFCOUNT' }),
  /** Idempotency guard: the workflow generated from one alarm of a task (history uuid). */
  workflowOfAlarm: (taskId: number, uuid: string) => ({ pk: `WFALARM#${taskId}#${uuid}`, sk: 'WFALARM' }),

  // Alarm pipeline (shared/domain/alarms/repository.ts)
  /**
   * One item per alarm of a task: the stored alarm (history) and the pipeline's decisions. Keyed by task
   * too, since a report may choose its uuid: another task reusing it must not collide.
   */
  alarm: (taskId: number, uuid: string) => ({ pk: `ALARM#${taskId}#${uuid}`, sk: 'ALARM' }),
  /** That an alarm of a task that stores nothing was processed (monitor alerts only: re-sends). */
  alarmSeen: (taskId: number, uuid: string) => ({ pk: `ALARM#${taskId}#${uuid}`, sk: 'SEEN' }),
  /**
   * A task's alarm log (its history index): one item per consumer batch and task, in one partition
   * per task and UTC day, sorted by the time it was written (AP-P9).
   */
  alarmLog: (taskId: number, atMs: number, id: string) => ({
    pk: keys.alarmLogDay(taskId, webhookLogDayOf(atMs)),
    sk: `${pad(atMs, 13)}#${id}`,
  }),
  alarmLogDay: (taskId: number, day: number) => `ALOG#${taskId}#${day}`,
  /** State of one compression metric of a task: window, upgrade firing, delay recovery. */
  metricState: (taskId: number, metric: string) => ({ pk: `METRIC#${taskId}#${metric}`, sk: 'STATE' }),
  /** Alarms of a metric counted per minute (upgrade), in the metric's item collection. */
  metricMinute: (taskId: number, metric: string, minute: number) => ({
    pk: `METRIC#${taskId}#${metric}`,
    sk: `MIN#${pad(minute, 10)}`,
  }),
  metricCollection: (taskId: number, metric: string) => `METRIC#${taskId}#${metric}`,
  /** The serial lane of a contended metric: who holds it, until when. */
  metricLane: (taskId: number, metric: string) => ({ pk: `METRIC#${taskId}#${metric}`, sk: 'LANE' }),
  metricMinuteSk: (minute: number) => `MIN#${pad(minute, 10)}`,

  /**
   * Due work (delayed compression flushes, delay recoveries, reminders, pause expiries), spread over
   * DUE_SHARDS partitions; the sort key orders by due time so "what is due" is one range query per
   * shard.
   */
  due: (shard: number, dueAt: number, kind: string, ref: string) => ({
    pk: `DUE#${shard}`,
    sk: `${pad(dueAt, 10)}#${kind}#${ref}`,
  }),
  /** Due work that failed its last attempt, kept for an operator (one partition per kind). */
  dueDead: (kind: string, dueAt: number, ref: string) => ({
    pk: `DUEDEAD#${kind}`,
    sk: `${pad(dueAt, 10)}#${ref}`,
  }),
  /** The partition of one kind's dead due work. */
  dueDeadKind: (kind: string) => `DUEDEAD#${kind}`,
  dueShard: (shard: number) => `DUE#${shard}`,
  dueUntil: (dueAt: number) => `${pad(dueAt, 10)}#~`,

  // Alarm ingestion: the receipt of a report sent with a client uuid (idempotent replays, 24 h TTL).
  reportReceipt: (uuid: string) => ({ pk: `REPORT#${uuid}`, sk: 'REPORT' }),
  /**
   * A task's alarm counts of one minute, per second (the rate limit shared by every container): one
   * item per task and minute (`minute` = Unix second / 60), so no item takes a task's stream for
   * longer than its minute; a task whose limit is larger than one item holds (TOKENS_PER_ITEM) has
   * its minute split over `shard` 0, 1, ...
   */
  rateWindow: (taskId: number, minute: number, shard = 0) => ({
    pk: shard === 0 ? `RATE#${taskId}#${minute}` : `RATE#${taskId}#${minute}#${shard}`,
    sk: 'RATE',
  }),

  // Outbound webhooks: attempts of their own grouped per event and listed per task by time (gsi1); a
  // task's delivery log (the settling first attempts of one consumer batch in one item, no index).
  webhookAttempt: (eventId: string, atMs: number, attempt: number) => ({
    pk: `WHEVT#${eventId}`,
    sk: `ATTEMPT#${pad(atMs, 13)}#${pad(attempt, 4)}`,
  }),
  webhookAttemptsOfEvent: (eventId: string) => ({ pk: `WHEVT#${eventId}` }),
  /** Taken by the one copy of a retry's message that makes that attempt (SQS may deliver two). */
  webhookRetryClaim: (eventId: string, attempt: number) => ({
    pk: `WHEVT#${eventId}`,
    sk: `CLAIM#${pad(attempt, 4)}`,
  }),
  /** Written once an event was put in the dead-letter queue after that attempt (one move per copy). */
  webhookDeadLetterMark: (eventId: string, attempt: number) => ({
    pk: `WHEVT#${eventId}`,
    sk: `DEAD#${pad(attempt, 4)}`,
  }),
  webhookAttemptPrefix: () => 'ATTEMPT#',
  /** A task's delivery log items: one partition per task and UTC day, sorted by time. */
  webhookLog: (taskId: number, atMs: number, id: string) => ({
    pk: keys.webhookLogDay(taskId, webhookLogDayOf(atMs)),
    sk: `${pad(atMs, 13)}#${id}`,
  }),
  webhookLogDay: (taskId: number, day: number) => `WHLOG#${taskId}#${day}`,
  /** The smallest sort key of a day log (delivery log, alarm log) at or after `atMs`. */
  dayLogSkFrom: (atMs: number) => `${pad(atMs, 13)}#`,
  webhookAttemptByTask: (taskId: number, atMs: number, suffix: string) => ({
    gsi1pk: `WHTASK#${taskId}`,
    gsi1sk: `${pad(atMs, 13)}#${suffix}`,
  }),
  webhookAttemptsOfTask: (taskId: number) => ({ gsi1pk: `WHTASK#${taskId}` }),

  // Notifications (shared/domain/notifications/repository.ts)
  /** A notification job's state; its attempts share the partition (one Query lists them). */
  notifyJob: (jobId: string) => ({ pk: `NJOB#${jobId}`, sk: 'STATE' }),
  notifyAttempt: (jobId: string, atMs: number, seq: number) => ({
    pk: `NJOB#${jobId}`,
    sk: `ATTEMPT#${pad(atMs, 13)}#${pad(seq, 3)}`,
  }),
  notifyJobPartition: (jobId: string) => `NJOB#${jobId}`,
  notifyAttemptPrefix: () => 'ATTEMPT#',
  /** A task's attempts, newest first, spread over NOTIFY_TASK_SHARDS partitions of gsi1. */
  notifyAttemptOfTask: (taskId: number, shard: number, atMs: number, jobId: string, seq: number) => ({
    gsi1pk: `TASKNOTIFY#${taskId}#${shard}`,
    gsi1sk: `${pad(atMs, 13)}#${jobId}#${pad(seq, 3)}`,
  }),
  notifyAttemptsOfTask: (taskId: number, shard: number) => `TASKNOTIFY#${taskId}#${shard}`,
  /** A job item's gsi1 sort key: the time of its last run. */
  notifyJobOfTaskSk: (atMs: number, jobId: string) => `${pad(atMs, 13)}#${jobId}`,
  /**
   * A task's notification log items (the first runs of a consumer batch that settled their jobs): one
   * partition per task and UTC day, sorted by time, no index entry.
   */
  notifyLog: (taskId: number, atMs: number, id: string) => ({
    pk: keys.notifyLogDay(taskId, webhookLogDayOf(atMs)),
    sk: `${pad(atMs, 13)}#${id}`,
  }),
  notifyLogDay: (taskId: number, day: number) => `NLOG#${taskId}#${day}`,
  /** Per-robot send counter (current minute) and rate-limit block. */
  robotRate: (robotId: string) => ({ pk: `ROBOT#${robotId}`, sk: 'RATE' }),
};

/**
 * The table's partition-key prefixes: the text up to and including the first `#` of every `pk` built
 * above. Each function's role may touch only the prefixes infra/access.ts declares for it (IAM's
 * `dynamodb:LeadingKeys`), so a new kind of partition is added here and declared there.
 */
export const PARTITION_PREFIXES = [
  'BU#',
  'DEPT#',
  'USER#',
  'GROUP#',
  'TAG#',
  'TPL#',
  'APP#',
  'NONCE#',
  'SESSION#',
  'SIGNIN#',
  'OIDC#',
  'SSOID#',
  'CLAIM#',
  'COUNTER#',
  'TASK#',
  'TASKNAME#',
  'SCHEDULE#',
  'WF#',
  'WFCOUNT#',
  'WFALARM#',
  'ALARM#',
  'ALOG#',
  'METRIC#',
  'DUE#',
  'DUEDEAD#',
  'REPORT#',
  'RATE#',
  'WHEVT#',
  'WHLOG#',
  'NJOB#',
  'NLOG#',
  'ROBOT#',
  'REPLAY#',
] as const;

export type PartitionPrefix = (typeof PARTITION_PREFIXES)[number];

/** The prefix of a partition key value (`TASK#12` -> `TASK#`), or the whole value when it has no `#` (`DEPTS`). */
export function partitionPrefix(value: string): string {
  const i = value.indexOf('#');
  return i < 0 ? value : value.slice(0, i + 1);
}

/** The one partition (of gsi1 and of gsi2) that lists every task. */
const TASK_LISTING = 'TASKS';

/** The one partition of gsi1 that lists every schedule. */
const SCHEDULE_LISTING = 'SCHEDULES';

export const DUE_SHARDS = 4;

/** Counter items per task for workflow counts (concurrent workflow changes of one task spread over them). */
export const WF_COUNT_SHARDS = 4;

/** gsi1 partitions per task for notification attempts (a busy task's attempts would be a hot key). */
export const NOTIFY_TASK_SHARDS = 4;

/** Stable shard for a reference (task id, workflow id ...). */
export function shardOf(ref: string, shards: number): number {
  let h = 0;
  for (let i = 0; i < ref.length; i++) h = (h * 31 + ref.charCodeAt(i)) >>> 0;
  return h % shards;
}
