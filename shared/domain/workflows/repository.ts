import { parseJson } from '../../json.ts';
import {
  BatchGetCommand,
  GetCommand,
  TransactWriteCommand,
  type TransactWriteCommandInput,
  UpdateCommand,
} from '@aws-sdk/lib-dynamodb';
import { db, fromItem, queryAll, SCHEMA_VERSION, tableName } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import { type DueItem, dueRecord } from '../due/repository.ts';
import { isOpen, type PipelineRecord, type Workflow } from './model.ts';

/**
 * The DynamoDB code of the workflows module, with the listing's reads in repository-listing.ts and
 * the task counts in repository-counts.ts. One function per access pattern (KEY-DESIGN.md,
 * AP-F1..AP-F12).
 */
type Key = { pk: string; sk: string };
type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

const strip = <T>(item: Record<string, unknown>) => fromItem<T>(item);

/**
 * The alarm content is stored as JSON text: a DynamoDB map does not keep key order, and the show view
 * and the events must give the content as it was reported.
 */
function workflowItem(w: Workflow): Record<string, unknown> {
  return {
    ...keys.workflow(w.id),
    ...(isOpen(w.status) ? keys.workflowOpenByMetric(w.task_id, w.metric, w.id) : {}),
    ...(w.counted ? keys.workflowOfTask(w.task_id, w.status, w.created_at, w.id) : {}),
    entity: 'workflow',
    schema_version: SCHEMA_VERSION,
    ...w,
    history: { ...w.history, ctn: JSON.stringify(w.history.ctn) },
  };
}

export function fromWorkflowItem(item: Record<string, unknown>): Workflow {
  const w = strip<Workflow>(item);
  const ctn = w.history.ctn as unknown;
  return {
    ...w,
    history: {
      ...w.history,
      ctn: typeof ctn === 'string' ? (parseJson(ctn) as Record<string, unknown>) : w.history.ctn,
    },
  };
}

function pipelineItem(p: PipelineRecord): Record<string, unknown> {
  return {
    pk: keys.workflowCollection(p.workflow_id),
    entity: 'workflow_pipeline',
    schema_version: SCHEMA_VERSION,
    ...p,
  };
}

/** Codes of a cancelled transaction, or undefined when the error is not a cancellation. */
export function cancellationCodes(err: unknown): string[] | undefined {
  const e = err as { name?: string; CancellationReasons?: { Code?: string }[] } | null;
  if (e?.name !== 'TransactionCanceledException') return undefined;
  return (e.CancellationReasons ?? []).map((r) => r.Code ?? 'None');
}

export const isConflictCode = (c: string) => c === 'ConditionalCheckFailed' || c === 'TransactionConflict';

/** BatchGet with retries of unprocessed keys. */
async function batchGet(keyList: Key[], consistent: boolean): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  for (let i = 0; i < keyList.length; i += 100) {
    let request: Record<string, { Keys: Key[]; ConsistentRead: boolean }> | undefined = {
      [tableName()]: { Keys: keyList.slice(i, i + 100), ConsistentRead: consistent },
    };
    for (let attempt = 0; request && Object.keys(request).length > 0; attempt++) {
      const res = await db().send(new BatchGetCommand({ RequestItems: request }));
      out.push(...((res.Responses?.[tableName()] ?? []) as Record<string, unknown>[]));
      request = res.UnprocessedKeys as typeof request;
      if (request && Object.keys(request).length > 0) {
        if (attempt > 8) throw new Error('workflows: DynamoDB kept keys unprocessed');
        await new Promise((r) => setTimeout(r, 20 * 2 ** attempt));
      }
    }
  }
  return out;
}

/** AP-F1: allocate the next workflow id (atomic counter). */
export async function allocateWorkflowId(): Promise<number> {
  const out = await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.counter('workflow'),
      UpdateExpression: 'ADD #seq :one SET entity = :entity, schema_version = :v',
      ExpressionAttributeNames: { '#seq': 'seq' },
      ExpressionAttributeValues: { ':one': 1, ':entity': 'counter', ':v': SCHEMA_VERSION },
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  return Number(out.Attributes?.seq);
}

/** AP-F2: the workflow generated from an alarm (idempotency guard), by history uuid. */
export async function getWorkflowIdOfAlarm(taskId: number, uuid: string): Promise<number | undefined> {
  const out = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.workflowOfAlarm(taskId, uuid), ConsistentRead: true }),
  );
  return out.Item ? Number(out.Item.workflow_id) : undefined;
}

/**
 * AP-F3: create a workflow with its first pipeline record, its alarm guard and its announcement
 * (outbox) in one transaction. `duplicate` when the alarm already generated a workflow.
 */
export async function insertWorkflow(input: {
  workflow: Workflow;
  pipeline: PipelineRecord;
  outbox: DueItem;
}): Promise<'created' | 'duplicate'> {
  const { workflow, pipeline, outbox } = input;
  try {
    await db().send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: tableName(),
              Item: {
                ...keys.workflowOfAlarm(workflow.task_id, workflow.history.uuid),
                entity: 'workflow_alarm',
                schema_version: SCHEMA_VERSION,
                workflow_id: workflow.id,
              },
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          {
            Put: {
              TableName: tableName(),
              Item: workflowItem(workflow),
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
          { Put: { TableName: tableName(), Item: pipelineItem(pipeline) } },
          { Put: { TableName: tableName(), Item: dueRecord(outbox) } },
        ],
      }),
    );
    return 'created';
  } catch (err) {
    const codes = cancellationCodes(err);
    if (codes && isConflictCode(codes[0])) return 'duplicate';
    throw err;
  }
}

/** AP-F4: one workflow by id. */
export async function getWorkflow(id: number, consistent = false): Promise<Workflow | undefined> {
  const out = await db().send(
    new GetCommand({ TableName: tableName(), Key: keys.workflow(id), ConsistentRead: consistent }),
  );
  return out.Item ? fromWorkflowItem(out.Item) : undefined;
}

/** AP-F5: workflows by ids (batch, strongly consistent); missing ones are absent from the map. */
export async function getWorkflows(ids: number[]): Promise<Map<number, Workflow>> {
  const items = await batchGet([...new Set(ids)].map(keys.workflow), true);
  return new Map(items.map((i) => [Number(i.id), fromWorkflowItem(i)]));
}

/**
 * AP-F6: a workflow and all its pipeline records: one Query on the item collection `WF#<id>`
 * (`consistent` for a claim link's answer, which must show the claim that just won).
 */
export async function getWorkflowWithPipelines(
  id: number,
  consistent = false,
): Promise<{ workflow: Workflow; pipelines: PipelineRecord[] } | undefined> {
  let workflow: Workflow | undefined;
  const pipelines: PipelineRecord[] = [];
  const items = await queryAll({
    ...(consistent ? { ConsistentRead: true } : {}),
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': keys.workflowCollection(id) },
  });
  for (const item of items) {
    if (item.entity === 'workflow') workflow = fromWorkflowItem(item);
    else if (item.entity === 'workflow_pipeline')
      pipelines.push({ ...strip<PipelineRecord>(item), sk: item.sk as string });
  }
  return workflow ? { workflow, pipelines } : undefined;
}

/** AP-F7: pipeline records by (workflow id, sort key), batch, strongly consistent. */
export async function getPipelineRecords(
  refs: { workflow_id: number; sk: string }[],
): Promise<PipelineRecord[]> {
  const items = await batchGet(
    refs.map((r) => ({ pk: keys.workflowCollection(r.workflow_id), sk: r.sk })),
    true,
  );
  return items.map((i) => ({ ...strip<PipelineRecord>(i), sk: String(i.sk) }));
}

/** A state change of one workflow: its new state and the record describing it. */
export interface WorkflowChange {
  before: Workflow;
  after: Workflow;
  pipeline: PipelineRecord;
}

/**
 * The update of one workflow: status, version, epoch, its owners (claimer, assignees), its round (a
 * reactivation), the sparse
 * open entry (gsi1) and, for a counted workflow, its listing entry (gsi2 moves to the new status's
 * partition). Conditioned on status and version, and on `counted` being what it was read as: the
 * count moves announced with the change assume it (the backfill may count a workflow meanwhile).
 */
function updateOf(change: WorkflowChange): TransactItem {
  const { before, after } = change;
  const wasOpen = isOpen(before.status);
  const open = isOpen(after.status);
  const values: Record<string, unknown> = {
    ':status': after.status,
    ':version': after.version,
    ':epoch': after.epoch,
    ':now': after.updated_at,
    ':fromStatus': before.status,
    ':fromVersion': before.version,
  };
  const set = ['#status = :status', 'version = :version', 'epoch = :epoch', 'updated_at = :now'];
  const remove: string[] = [];
  if (open && !wasOpen) {
    const g = keys.workflowOpenByMetric(after.task_id, after.metric, after.id);
    set.push('gsi1pk = :g1pk', 'gsi1sk = :g1sk');
    values[':g1pk'] = g.gsi1pk;
    values[':g1sk'] = g.gsi1sk;
  }
  if (!open && wasOpen) remove.push('gsi1pk', 'gsi1sk');
  if (before.counted && after.status !== before.status) {
    set.push('gsi2pk = :g2pk');
    values[':g2pk'] = keys.workflowsOfTask(after.task_id, after.status);
  }
  if (after.claimer !== undefined) {
    set.push('claimer = :claimer');
    values[':claimer'] = after.claimer;
  } else if (before.claimer !== undefined) remove.push('claimer');
  if (after.assignees !== undefined) {
    set.push('assignees = :assignees');
    values[':assignees'] = after.assignees;
  }
  if (after.round !== before.round && after.round !== undefined) {
    set.push('round = :round');
    values[':round'] = after.round;
  }
  // The event sequence: conditioned too, since a fired reminder moves it without moving the version.
  if (after.seq !== undefined) {
    set.push('seq = :seq');
    values[':seq'] = after.seq;
  }
  let condition = 'version = :fromVersion AND #status = :fromStatus';
  if (before.seq !== undefined) {
    condition += ' AND seq = :fromSeq';
    values[':fromSeq'] = before.seq;
  } else condition += ' AND attribute_not_exists(seq)';
  if (before.counted) {
    condition += ' AND counted = :counted';
    values[':counted'] = true;
  } else condition += ' AND attribute_not_exists(counted)';
  return {
    Update: {
      TableName: tableName(),
      Key: keys.workflow(before.id),
      UpdateExpression: `SET ${set.join(', ')}${remove.length ? ` REMOVE ${remove.join(', ')}` : ''}`,
      ConditionExpression: condition,
      ExpressionAttributeNames: { '#status': 'status' },
      ExpressionAttributeValues: values,
    },
  };
}

/**
 * AP-F8: apply state changes to several workflows all-or-nothing: one transaction with a status and
 * version condition per workflow, their pipeline records and one outbox item. `conflict` when a
 * condition failed or another transaction touched one of the workflows at the same time.
 */
export async function applyWorkflowChanges(
  changes: WorkflowChange[],
  outbox: DueItem,
): Promise<'ok' | 'conflict'> {
  const items: TransactItem[] = [];
  for (const c of changes) {
    items.push(updateOf(c));
    items.push({
      Put: {
        TableName: tableName(),
        Item: pipelineItem(c.pipeline),
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    });
  }
  items.push({ Put: { TableName: tableName(), Item: dueRecord(outbox) } });
  try {
    await db().send(new TransactWriteCommand({ TransactItems: items }));
    return 'ok';
  } catch (err) {
    const codes = cancellationCodes(err);
    if (codes?.some(isConflictCode)) return 'conflict';
    if ((err as { name?: string }).name === 'TransactionConflictException') return 'conflict';
    throw err;
  }
}

/** AP-F9: the open (pending / processing) workflows of a task's metric, via the sparse gsi1 entry. */
export async function listOpenWorkflowIdsOfMetric(taskId: number, metric: string): Promise<number[]> {
  const items = await queryAll({
    IndexName: 'gsi1',
    KeyConditionExpression: 'gsi1pk = :pk',
    ExpressionAttributeValues: { ':pk': keys.openWorkflowsOfMetric(taskId, metric).gsi1pk },
    ProjectionExpression: 'id',
  });
  return items.map((item) => Number(item.id));
}

/**
 * AP-F10: record a fired reminder, if its workflow still has the status and epoch it was scheduled
 * for and the event sequence it was read at (the record takes the next: `pipeline.seq`). `moved-on`
 * when the workflow changed (its status, epoch or sequence: the caller reads it again);
 * `already-recorded` when this (reminder, due time) was recorded by an earlier run.
 */
export async function insertReminderRecord(
  expect: { status: number; epoch: number; seq: number | undefined },
  pipeline: PipelineRecord,
): Promise<'recorded' | 'moved-on' | 'already-recorded'> {
  try {
    await db().send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Update: {
              TableName: tableName(),
              Key: keys.workflow(pipeline.workflow_id),
              UpdateExpression: 'SET seq = :seq',
              ConditionExpression: `#status = :status AND epoch = :epoch AND ${
                expect.seq === undefined ? 'attribute_not_exists(seq)' : 'seq = :fromSeq'
              }`,
              ExpressionAttributeNames: { '#status': 'status' },
              ExpressionAttributeValues: {
                ':status': expect.status,
                ':epoch': expect.epoch,
                ':seq': pipeline.seq,
                ...(expect.seq === undefined ? {} : { ':fromSeq': expect.seq }),
              },
            },
          },
          {
            Put: {
              TableName: tableName(),
              Item: pipelineItem(pipeline),
              ConditionExpression: 'attribute_not_exists(pk)',
            },
          },
        ],
      }),
    );
    return 'recorded';
  } catch (err) {
    const codes = cancellationCodes(err);
    // Recorded by an earlier run (which moved the sequence on too): that first.
    if (codes?.[1] === 'ConditionalCheckFailed') return 'already-recorded';
    if (codes?.[0] === 'ConditionalCheckFailed') return 'moved-on';
    throw err;
  }
}

/** AP-F11: the tasks (of `taskIds`) on which a user holds any permission (batch of permission items). */
export async function tasksWithPermission(uid: number, taskIds: number[]): Promise<Map<number, 'rw' | 'ro'>> {
  const items = await batchGet(
    [...new Set(taskIds)].map((t) => keys.taskPermission(t, uid)),
    true,
  );
  return new Map(items.map((i) => [Number(i.task_id), i.access === 'rw' ? 'rw' : 'ro']));
}
