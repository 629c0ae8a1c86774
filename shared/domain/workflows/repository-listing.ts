import { QueryCommand, ScanCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { db, getItems, SCHEMA_VERSION, tableName } from '../../db/client.ts';
import { keys, WF_COUNT_SHARDS } from '../../db/keys.ts';
import { COUNT_FIELDS, type CountField, type Workflow, type WorkflowStatus } from './model.ts';
import { cancellationCodes, fromWorkflowItem, isConflictCode } from './repository.ts';
import { countShardOf } from './repository-counts.ts';

/**
 * Reads of the workflow listing and counts (GET /workflow/list, GET /workflow/counts; AP-F13 ...
 * AP-F15), and the maintenance that puts workflows stored before into them.
 */

/** A task's workflow counts by status (negative sums of counts applied out of order read as 0). */
export type WorkflowCounts = Record<CountField, number>;

/** AP-F13: the counts of tasks: BatchGetItem of their WF_COUNT_SHARDS counter items, summed. */
export async function getWorkflowCounts(taskIds: number[]): Promise<Map<number, WorkflowCounts>> {
  const ids = [...new Set(taskIds)];
  const shardKeys = ids.flatMap((t) =>
    Array.from({ length: WF_COUNT_SHARDS }, (_, s) => keys.workflowCount(t, s)),
  );
  const items = await getItems(shardKeys, { what: 'workflow counts' });
  const fields = Object.values(COUNT_FIELDS);
  const zero = () => Object.fromEntries(fields.map((f) => [f, 0])) as WorkflowCounts;
  const out = new Map(ids.map((t) => [t, zero()]));
  for (const item of items) {
    const c = out.get(Number(item.task_id));
    if (!c) continue;
    for (const f of fields) c[f] += Number(item[f] ?? 0);
  }
  for (const c of out.values()) for (const f of fields) c[f] = Math.max(0, c[f]);
  return out;
}

/** Filters of the listing other than status and time (FilterExpression). */
export interface WorkflowFilter {
  claimer?: number;
  assignee?: number;
}

/**
 * AP-F14: one page of a task's workflows of one status, newest first: Query gsi2
 * `WFTASK#<task>#<status>`, `gsi2sk BETWEEN <from> AND <upTo>` (creation time, then id), claimer and
 * assignee as a FilterExpression; `evaluate` bounds the items read; `startKey` continues a page.
 */
export async function queryWorkflowsOfTask(input: {
  taskId: number;
  status: WorkflowStatus;
  from: string;
  upTo: string;
  filter: WorkflowFilter;
  evaluate: number;
  startKey?: Record<string, unknown>;
}): Promise<{ workflows: { workflow: Workflow; sk: string }[]; next?: Record<string, unknown> }> {
  const parts: string[] = [];
  const values: Record<string, unknown> = {
    ':pk': keys.workflowsOfTask(input.taskId, input.status),
    ':from': input.from,
    ':upTo': input.upTo,
  };
  if (input.filter.claimer !== undefined) {
    parts.push('claimer = :claimer');
    values[':claimer'] = input.filter.claimer;
  }
  if (input.filter.assignee !== undefined) {
    parts.push('contains(assignees, :assignee)');
    values[':assignee'] = input.filter.assignee;
  }
  const out = await db().send(
    new QueryCommand({
      TableName: tableName(),
      IndexName: 'gsi2',
      KeyConditionExpression: 'gsi2pk = :pk AND gsi2sk BETWEEN :from AND :upTo',
      ExpressionAttributeValues: values,
      ...(parts.length ? { FilterExpression: parts.join(' AND ') } : {}),
      ScanIndexForward: false,
      Limit: input.evaluate,
      ExclusiveStartKey: input.startKey,
    }),
  );
  return {
    workflows: (out.Items ?? []).map((i) => ({ workflow: fromWorkflowItem(i), sk: String(i.gsi2sk) })),
    next: out.LastEvaluatedKey,
  };
}

/**
 * AP-F15 (maintenance, never on a request path): one page of a Scan for workflows stored before the
 * listing and counts existed (`counted` absent).
 */
export async function scanUncountedWorkflows(
  startKey?: Record<string, unknown>,
): Promise<{ ids: number[]; scanned: number; next?: Record<string, unknown> }> {
  const out = await db().send(
    new ScanCommand({
      TableName: tableName(),
      FilterExpression: 'entity = :wf AND attribute_not_exists(counted)',
      ExpressionAttributeValues: { ':wf': 'workflow' },
      ProjectionExpression: 'id',
      ExclusiveStartKey: startKey,
    }),
  );
  return {
    ids: (out.Items ?? []).map((i) => Number(i.id)),
    scanned: out.ScannedCount ?? 0,
    next: out.LastEvaluatedKey,
  };
}

/**
 * AP-F15: count a workflow stored before: its listing entry, owners and `counted` (condition: the
 * version read, not counted yet) and its status added to its counter item, in one transaction.
 * False when it changed since it was read.
 */
export async function countStoredWorkflow(
  w: Workflow,
  owners: Pick<Workflow, 'claimer' | 'assignees'>,
): Promise<boolean> {
  const g = keys.workflowOfTask(w.task_id, w.status, w.created_at, w.id);
  const field = COUNT_FIELDS[w.status];
  const set = ['gsi2pk = :g2pk', 'gsi2sk = :g2sk', 'counted = :true'];
  const values: Record<string, unknown> = {
    ':g2pk': g.gsi2pk,
    ':g2sk': g.gsi2sk,
    ':true': true,
    ':v': w.version,
  };
  if (owners.claimer !== undefined) {
    set.push('claimer = :claimer');
    values[':claimer'] = owners.claimer;
  }
  if (owners.assignees !== undefined) {
    set.push('assignees = :assignees');
    values[':assignees'] = owners.assignees;
  }
  try {
    await db().send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Update: {
              TableName: tableName(),
              Key: keys.workflow(w.id),
              UpdateExpression: `SET ${set.join(', ')}`,
              ConditionExpression: 'version = :v AND attribute_not_exists(counted)',
              ExpressionAttributeValues: values,
            },
          },
          {
            Update: {
              TableName: tableName(),
              Key: keys.workflowCount(w.task_id, countShardOf(w.id)),
              UpdateExpression: 'ADD #f :one SET entity = :e, schema_version = :sv, task_id = :t',
              ExpressionAttributeNames: { '#f': field },
              ExpressionAttributeValues: {
                ':one': 1,
                ':e': 'workflow_count',
                ':sv': SCHEMA_VERSION,
                ':t': w.task_id,
              },
            },
          },
        ],
      }),
    );
    return true;
  } catch (err) {
    const codes = cancellationCodes(err);
    if (codes?.some(isConflictCode)) return false;
    if ((err as { name?: string }).name === 'TransactionConflictException') return false;
    throw err;
  }
}
