/**
 * What each function may do on AWS, in the terms infra/definitions.ts declares it for every route,
 * queue consumer and the schedule (`access`). ServiceFunctions turns a function's access into the
 * statements of its role and nothing more; the least-privilege check (infra/privileges) proves
 * against the integration suite that every call is allowed and every grant is used
 * (docs/aws-operations.md, "Least privilege"). Pure data and pure functions: the local runtime reads
 * it too.
 */
import type { PartitionPrefix } from '../shared/db/keys.ts';
import type { QueueName } from '../shared/contracts/messages.ts';
import type { table } from '../shared/contracts/table.ts';

/**
 * DynamoDB item actions. There is no Scan: a scan reads every partition whatever the key condition
 * says (IAM's `dynamodb:LeadingKeys` does not apply to it), and no request path scans.
 * TransactWriteItems and BatchExecuteStatement are no actions of their own: IAM authorizes each of
 * their items (PutItem, UpdateItem, DeleteItem, ConditionCheckItem) or statements (PartiQLInsert ...).
 */
export type ItemAction =
  | 'GetItem'
  | 'BatchGetItem'
  | 'Query'
  | 'PutItem'
  | 'UpdateItem'
  | 'DeleteItem'
  | 'BatchWriteItem'
  | 'ConditionCheckItem'
  | 'PartiQLInsert'
  | 'PartiQLSelect'
  | 'PartiQLUpdate'
  | 'PartiQLDelete';

export type IndexName = (typeof table.globalSecondaryIndexes)[number]['indexName'];

/** A queue, or its dead-letter queue (`alarm-dlq`). */
export type QueueRef = QueueName | `${QueueName}-dlq`;
export type QueueAction =
  | 'SendMessage'
  | 'ReceiveMessage'
  | 'DeleteMessage'
  | 'ChangeMessageVisibility'
  | 'GetQueueAttributes';

/**
 * `sso-client`: single sign-on's client secret, which exists only in a stack with single sign-on
 * configured (a function declaring it gets no grant otherwise).
 */
export type SecretName = 'seal-key' | 'notify-providers' | 'sso-client';

export interface Access {
  /**
   * Item actions on the table, each with the partition-key prefixes (shared/db/keys.ts) it may touch:
   * enforced with `dynamodb:LeadingKeys`, which names the table's partition key of every item a
   * request reads or writes (all of them, for a batch).
   */
  items?: Partial<Record<ItemAction, readonly PartitionPrefix[]>>;
  /**
   * Queries of a global secondary index, any partition of it. An index has partition keys of its own
   * (`USERPERM#<uid>`, `TASKS`), and AWS does not document `dynamodb:LeadingKeys` as naming them, so
   * an index is granted whole, and only to the functions that query it.
   */
  indexQueries?: readonly IndexName[];
  /** SQS actions, each on the queues (and dead-letter queues) it applies to. */
  queues?: Partial<Record<QueueAction, readonly QueueRef[]>>;
  /** Secrets read with GetSecretValue. */
  secrets?: readonly SecretName[];
  /** The notification providers as configured (SES, SNS SMS, Pinpoint voice; notify-providers.ts). */
  notifyProviders?: boolean;
}

const sorted = <T extends string>(values: Iterable<T>): T[] => [...new Set(values)].sort();

/** The union of several accesses (a function that does what each of them needs). */
export function access(...parts: readonly Access[]): Access {
  const items: Partial<Record<ItemAction, PartitionPrefix[]>> = {};
  const queues: Partial<Record<QueueAction, QueueRef[]>> = {};
  const indexQueries: IndexName[] = [];
  const secrets: SecretName[] = [];
  let notifyProviders = false;
  for (const p of parts) {
    for (const [a, prefixes] of Object.entries(p.items ?? {}) as [ItemAction, PartitionPrefix[]][])
      items[a] = sorted([...(items[a] ?? []), ...prefixes]);
    for (const [a, refs] of Object.entries(p.queues ?? {}) as [QueueAction, QueueRef[]][])
      queues[a] = sorted([...(queues[a] ?? []), ...refs]);
    indexQueries.push(...(p.indexQueries ?? []));
    secrets.push(...(p.secrets ?? []));
    notifyProviders ||= p.notifyProviders === true;
  }
  const out: Access = {};
  const actions = Object.keys(items).sort() as ItemAction[];
  if (actions.length) out.items = Object.fromEntries(actions.map((a) => [a, items[a]]));
  if (indexQueries.length) out.indexQueries = sorted(indexQueries);
  const queueActions = Object.keys(queues).sort() as QueueAction[];
  if (queueActions.length) out.queues = Object.fromEntries(queueActions.map((a) => [a, queues[a]]));
  if (secrets.length) out.secrets = sorted(secrets);
  if (notifyProviders) out.notifyProviders = true;
  return out;
}

/** The same access in one canonical form (equal accesses give equal keys: they share a role). */
export function accessKey(a: Access): string {
  return JSON.stringify(access(a));
}

/** Whether a function may write, update or delete items (PartiQL included). */
export function writesItems(a: Access): boolean {
  const writes: ItemAction[] = [
    'PutItem',
    'UpdateItem',
    'DeleteItem',
    'BatchWriteItem',
    'PartiQLInsert',
    'PartiQLUpdate',
    'PartiQLDelete',
  ];
  return writes.some((w) => (a.items?.[w]?.length ?? 0) > 0);
}

// ---- What the shared parts of the service need ------------------------------------------------------
// Functions combine these with access(...) in infra/definitions.ts, and add what is their own.

/** Unsealing stored tokens and secrets: the seal key, read once per container. */
export const SEAL_KEY: Access = { secrets: ['seal-key'] };

/**
 * Application authentication (`app`): the app, its token sealed; a request-bound signature's nonce
 * taken once (API guide §3.1.1).
 */
export const APP_AUTH = access(SEAL_KEY, { items: { GetItem: ['APP#'], PutItem: ['NONCE#'] } });

/** Task authentication (`app+task`): the app, then the task (its secret sealed). */
export const TASK_AUTH = access(APP_AUTH, { items: { GetItem: ['TASK#'] } });

/** The acting user of a read, the task and the user's permission on it (tasks/access.ts). */
export const TASK_READER: Access = { items: { GetItem: ['TASK#', 'USER#'] } };

/**
 * A signed-in person (the console's session cookie): the session, the person with their credential
 * (one batch), and the session's last use refreshed (at most once a minute).
 */
export const PERSON_AUTH: Access = {
  items: { GetItem: ['SESSION#'], BatchGetItem: ['USER#'], UpdateItem: ['SESSION#'] },
};

/** An interface route the console calls too (`app|person`): an app, or a signed-in person. */
export const APP_OR_PERSON = access(APP_AUTH, PERSON_AUTH);

/**
 * A route beyond the interface (`reader`, `admin`): a signed-in person, or an app holding a grant; with
 * the grant `admin` the user the app names must exist (it then acts as the operator).
 */
export const READER_AUTH = access(APP_OR_PERSON, { items: { GetItem: ['USER#'] } });

/**
 * Signing in with a password (`POST /auth/signin`): the tries of the source address and of the account
 * (taken, locked, cleared, given back; read when refused; an unknown name's counter keyed with the
 * seal key), the person by account name (gsi1) or e-mail (gsi2), their credential (its hash replaced
 * when made with older parameters), and the new session.
 */
export const SIGN_IN: Access = access(SEAL_KEY, {
  items: {
    GetItem: ['SIGNIN#', 'USER#'],
    UpdateItem: ['SIGNIN#', 'USER#'],
    PutItem: ['SESSION#'],
  },
  indexQueries: ['gsi1', 'gsi2'],
});

/** Single sign-on's two functions: the provider's client secret, read once per container. */
export const SSO_LOGIN: Access = { secrets: ['sso-client'] };

/**
 * Alarm intake (`alarm`, /alarm/*): the task through the container's cache, the task's share of the
 * rate limit (a conditional UpdateItem of its minute's per-second counts, `RATE#`, per chunk of alarms), the
 * alarm queue, and an accepted alarm as a sign of life of a task with a heartbeat (its heartbeat item,
 * `TASK#`). Never a scan or a delete.
 */
export const INTAKE = access(SEAL_KEY, {
  items: { GetItem: ['TASK#'], UpdateItem: ['RATE#', 'TASK#'] },
  queues: { SendMessage: ['alarm'] },
});

/** The detail of a task (`/alarmtask/show`, `/alarmtask/view`): its directory records, read in batches. */
export const TASK_DETAIL: Access = {
  items: { GetItem: ['DEPT#', 'TPL#'], BatchGetItem: ['GROUP#', 'TAG#', 'USER#'] },
};

/**
 * Writing a task's configuration (store, update, updatefields): the directory records it names (the
 * creator, department, alarm groups, template, users of phone channels, schedules), then the task,
 * its name guard, its permission items and the schedules' reference index (a reference item and the
 * schedule's count each) in one transaction, and a PING to a new webhook.
 */
export const TASK_CONFIG: Access = {
  items: {
    GetItem: ['DEPT#', 'TPL#', 'USER#'],
    BatchGetItem: ['GROUP#', 'SCHEDULE#', 'USER#'],
    PutItem: ['SCHEDULE#', 'TASK#', 'TASKNAME#'],
    UpdateItem: ['SCHEDULE#'],
  },
  queues: { SendMessage: ['webhook'] },
};

/**
 * Who a schedule a receiver names has on call, when a message is made (schedules/resolve.ts, cached
 * per container): a Query of its versions and one of its overrides.
 */
export const ONCALL_RESOLVE: Access = { items: { Query: ['SCHEDULE#'] } };

/** Reading a schedule (`reader` routes): the acting user, the schedule, its versions and overrides. */
export const SCHEDULE_READ = access(READER_AUTH, { items: { GetItem: ['SCHEDULE#'], Query: ['SCHEDULE#'] } });

/** A task setting or status (`version`-conditioned update; re-read on a lost race). */
export const TASK_SETTING: Access = { items: { GetItem: ['TASK#'], UpdateItem: ['TASK#'] } };

/** Stopping, starting or pausing a task (a pause schedules its expiry as due work). */
export const TASK_STATUS = access(TASK_SETTING, { items: { PutItem: ['DUE#'] } });

/**
 * Publishing a workflow announcement (workflows/service.ts announce): its pipeline records and
 * workflows, the task and its alarm groups, webhook events and notification jobs, reminders.
 */
export const WORKFLOW_ANNOUNCE: Access = access(ONCALL_RESOLVE, {
  items: { GetItem: ['TASK#'], BatchGetItem: ['GROUP#', 'WF#'], PutItem: ['DUE#'] },
  queues: { SendMessage: ['notify', 'webhook'] },
});

/** The announcement of what a person did also names them (the pipeline's own are by nobody). */
export const ANNOUNCE_PEOPLE: Access = { items: { BatchGetItem: ['USER#'] } };

/**
 * What a workflow operation does, whoever asks: the workflows, the acting and assigned users, the
 * acting user's permissions, one transaction (workflows, pipeline records, the announcement as due
 * work), then the announcement published and its due item deleted.
 */
export const WORKFLOW_CHANGE = access(WORKFLOW_ANNOUNCE, ANNOUNCE_PEOPLE, {
  items: {
    BatchGetItem: ['TASK#'],
    UpdateItem: ['WF#'],
    PutItem: ['WF#'],
    DeleteItem: ['DUE#'],
  },
});

/** A workflow operation (`PUT /workflow/<op>`), by an app or a signed-in person. */
export const WORKFLOW_OPERATION = access(APP_OR_PERSON, WORKFLOW_CHANGE);

/**
 * A claim link's page (`GET /claim`, claims/): the link key (from the seal key), the source address's
 * rate limit (read when refused), the workflow with its pipeline records, the people it names, and a
 * group link's signed-in person.
 */
export const CLAIM_LINK = access(SEAL_KEY, PERSON_AUTH, {
  items: { UpdateItem: ['CLAIM#'], GetItem: ['CLAIM#'], Query: ['WF#'], BatchGetItem: ['USER#'] },
});

/** An operation that changes a workflow's status also moves the task's workflow counts (exactly once). */
export const WORKFLOW_COUNTS: Access = { items: { UpdateItem: ['DUE#', 'WFCOUNT#'] } };

/** Creating a workflow from an alarm: its id, the alarm's guard, the workflow and its announcement. */
export const WORKFLOW_CREATE = access(WORKFLOW_ANNOUNCE, WORKFLOW_COUNTS, {
  items: {
    GetItem: ['WFALARM#'],
    UpdateItem: ['COUNTER#'],
    PutItem: ['WF#', 'WFALARM#'],
    DeleteItem: ['DUE#'],
  },
});

/** Finishing the open workflows of a recovered metric (gsi1 `WFOPEN#`). */
export const WORKFLOW_FINISH = access(WORKFLOW_ANNOUNCE, WORKFLOW_COUNTS, {
  indexQueries: ['gsi1'],
  items: { UpdateItem: ['WF#'], PutItem: ['WF#'], DeleteItem: ['DUE#'] },
});

/**
 * What the alarm pipeline does later, as due work (alarms/pipeline.ts): a delay window's flush and a
 * delayed recovery read the task, the alarm record (the due consumer reads a batch's records together:
 * DUE_WORK) and the metric's state, notify (alarm groups,
 * events, jobs), create or finish workflows and clear the metric's pending recovery.
 */
export const ALARM_DUE_WORK = access(WORKFLOW_CREATE, WORKFLOW_FINISH, {
  items: {
    GetItem: ['METRIC#', 'TASK#'],
    BatchGetItem: ['GROUP#'],
    UpdateItem: ['METRIC#'],
  },
  queues: { SendMessage: ['notify', 'webhook'] },
});

/**
 * The alarm pipeline's decisions for a consumer batch (alarms/pipeline.ts): the batch's tasks, the
 * metrics' state and minute buckets, the alarm records (PartiQL INSERTs, or in the metric's
 * transaction) with the due work they arm, history ids, the batch's alarm log and webhook first
 * attempts, and all the later work does.
 */
export const ALARM_PIPELINE = access(ALARM_DUE_WORK, {
  items: {
    GetItem: ['ALARM#'],
    BatchGetItem: ['TASK#'],
    Query: ['METRIC#'],
    PutItem: ['ALARM#', 'DUE#', 'METRIC#'],
    UpdateItem: ['COUNTER#'],
    PartiQLInsert: ['ALARM#'],
    BatchWriteItem: ['ALOG#', 'WHEVT#', 'WHLOG#'],
  },
});

/** The alarm log of a task (`ALOG#<task>#<day>`), read by day. */
export const ALARM_LOG: Access = { items: { Query: ['ALOG#'] } };

/**
 * A what-if replay of a task's alarms (`POST /alarmtask/replay` and the replay queue's consumer): the
 * window's alarm log and records, the alarm groups and people its receivers name, the predefined
 * template of its sample messages, and its result item, the one item it writes.
 */
export const REPLAY_RUN: Access = {
  items: {
    Query: ['ALOG#'],
    BatchGetItem: ['ALARM#', 'GROUP#', 'USER#'],
    GetItem: ['TPL#'],
    PutItem: ['REPLAY#'],
  },
};

/** A webhook event's own attempts (`WHEVT#`) and a task's delivery log (`WHLOG#`, and alarm-log days). */
export const WEBHOOK_ATTEMPTS: Access = { items: { Query: ['ALOG#', 'WHEVT#', 'WHLOG#'] } };

/** A task's notification log (`NLOG#<task>#<day>`: the first runs that settled its jobs), read by day. */
export const NOTIFY_LOG: Access = { items: { Query: ['NLOG#'] } };

/**
 * Dead letters of every queue, for a super administrator (`admin`: an app holding the grant, or a
 * signed-in person whose role is read): each dead-letter queue scanned (received, then released), and
 * the scheduler's dead due work (`DUEDEAD#`, filtered by task through the workflows it names).
 */
export const DEAD_LETTERS = access(READER_AUTH, {
  items: { Query: ['DUEDEAD#'], BatchGetItem: ['WF#'] },
  queues: {
    ReceiveMessage: ['alarm-dlq', 'notify-dlq', 'webhook-dlq'],
    ChangeMessageVisibility: ['alarm-dlq', 'notify-dlq', 'webhook-dlq'],
  },
});

/** A queue consumer's event source mapping: what Lambda needs of the consumer's role to read its queue. */
export function eventSource(queue: QueueName): Access {
  return { queues: { ReceiveMessage: [queue], DeleteMessage: [queue], GetQueueAttributes: [queue] } };
}

/**
 * What due work does when it runs (the due queue's consumer): workflow announcements and reminders,
 * pause expiries, the pipeline's delayed work (a batch's alarm records and workflows read together),
 * heartbeat checks, coverage checks of on-call schedules (the schedule, its raised gaps, versions and
 * overrides); the batch's webhook events first-attempted (their attempts recorded) and its jobs
 * queued; its items finished (a PartiQL DELETE on the lease token), retried, rescheduled or buried.
 */
export const DUE_WORK = access(
  SEAL_KEY,
  ALARM_DUE_WORK,
  WORKFLOW_ANNOUNCE,
  ANNOUNCE_PEOPLE,
  WORKFLOW_COUNTS,
  {
    items: {
      GetItem: ['SCHEDULE#', 'TASK#'],
      BatchGetItem: ['ALARM#', 'TASK#'],
      PutItem: ['DUE#', 'DUEDEAD#', 'WF#'],
      UpdateItem: ['DUE#', 'SCHEDULE#', 'TASK#'],
      DeleteItem: ['DUE#'],
      BatchWriteItem: ['WHEVT#', 'WHLOG#'],
      PartiQLDelete: ['DUE#'],
    },
    queues: { SendMessage: ['alarm'] },
  },
);
