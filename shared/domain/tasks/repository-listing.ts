import { QueryCommand, ScanCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { db, isConditionFailure, tableName } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import type { Task } from './model.ts';
import { fromTaskItem } from './repository.ts';

/** The task listing (GET /alarmtask/list, AP-T13, AP-T15): the listing indexes and their maintenance. */

/** The listing indexes: gsi1 sorts the tasks by lower-cased pinyin, gsi2 by lower-cased name. */
export type TaskListingIndex = 'gsi1' | 'gsi2';

/** Filters of the listing other than the prefix (behavior: `status` is the effective status). */
export interface TaskFilter {
  department_id?: number;
  status?: 0 | 1 | 2;
  tag_id?: number;
}

/** The FilterExpression of a TaskFilter (the same test as list.ts `matchesFilter`, in DynamoDB terms). */
function filterExpression(
  filter: TaskFilter,
  now: number,
): {
  FilterExpression?: string;
  ExpressionAttributeNames?: Record<string, string>;
  ExpressionAttributeValues?: Record<string, unknown>;
} {
  const parts: string[] = [];
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = {};
  if (filter.department_id !== undefined) {
    parts.push('department_id = :dept');
    values[':dept'] = filter.department_id;
  }
  if (filter.tag_id !== undefined) {
    parts.push('contains(task_tags, :tag)');
    values[':tag'] = filter.tag_id;
  }
  if (filter.status === 0) {
    names['#s'] = 'status';
    parts.push('#s = :stopped');
    values[':stopped'] = 0;
  } else if (filter.status !== undefined) {
    // A pause that has passed reads as running (effectiveStatus).
    names['#s'] = 'status';
    Object.assign(values, { ':pause': 2, ':now': now });
    if (filter.status === 1) {
      values[':run'] = 1;
      parts.push('(#s = :run OR (#s = :pause AND paused_until <= :now))');
    } else parts.push('(#s = :pause AND (attribute_not_exists(paused_until) OR paused_until > :now))');
  }
  if (parts.length === 0) return {};
  return {
    FilterExpression: parts.join(' AND '),
    ...(Object.keys(names).length ? { ExpressionAttributeNames: names } : {}),
    ExpressionAttributeValues: values,
  };
}

/** A listed task with the listing key it was found under (cursors are built from it). */
export interface ListedTask {
  task: Task;
  sk: string;
}

const idOfListingSk = (sk: string) => Number(sk.slice(-12));

/**
 * AP-T13: one page of the task listing, ascending: Query `TASKS` on gsi1 (pinyin) or gsi2 (name),
 * `begins_with(sk, prefix)` when given, after `after` (a listing key of the same index), the filters
 * as a FilterExpression. `evaluate` bounds the items read; `last` is the last key read when more may
 * follow.
 */
export async function queryTaskListing(input: {
  index: TaskListingIndex;
  prefix?: string;
  after?: string;
  filter: TaskFilter;
  now: number;
  evaluate: number;
}): Promise<{ tasks: ListedTask[]; last?: string }> {
  const { index, prefix, after, now, evaluate } = input;
  const pkName = `${index}pk`;
  const skName = `${index}sk`;
  const filter = filterExpression(input.filter, now);
  const out = await db().send(
    new QueryCommand({
      TableName: tableName(),
      IndexName: index,
      KeyConditionExpression: prefix ? '#pk = :pk AND begins_with(#sk, :prefix)' : '#pk = :pk',
      ExpressionAttributeNames: {
        '#pk': pkName,
        ...(prefix ? { '#sk': skName } : {}),
        ...filter.ExpressionAttributeNames,
      },
      ExpressionAttributeValues: {
        ':pk': keys.taskListingPartition(),
        ...(prefix ? { ':prefix': prefix } : {}),
        ...filter.ExpressionAttributeValues,
      },
      ...(filter.FilterExpression ? { FilterExpression: filter.FilterExpression } : {}),
      Limit: evaluate,
      ...(after
        ? {
            ExclusiveStartKey: {
              ...keys.task(idOfListingSk(after)),
              [pkName]: keys.taskListingPartition(),
              [skName]: after,
            },
          }
        : {}),
    }),
  );
  return {
    tasks: (out.Items ?? []).map((item) => ({ task: fromTaskItem(item), sk: String(item[skName]) })),
    last: out.LastEvaluatedKey ? String(out.LastEvaluatedKey[skName]) : undefined,
  };
}

/**
 * AP-T15 (maintenance, never on a request path): one page of a Scan for task items stored without
 * their listing keys (before the listing existed).
 */
export async function scanTasksWithoutListing(
  startKey?: Record<string, unknown>,
): Promise<{ tasks: Task[]; scanned: number; next?: Record<string, unknown> }> {
  const out = await db().send(
    new ScanCommand({
      TableName: tableName(),
      FilterExpression: 'entity = :task AND attribute_not_exists(gsi2pk)',
      ExpressionAttributeValues: { ':task': 'task' },
      ExclusiveStartKey: startKey,
    }),
  );
  return {
    tasks: (out.Items ?? []).map(fromTaskItem),
    scanned: out.ScannedCount ?? 0,
    next: out.LastEvaluatedKey,
  };
}

/** AP-T15: give a task its listing keys, under `version = :v` (false when it changed since it was read). */
export async function setTaskListingKeys(task: Task): Promise<boolean> {
  const k = keys.taskListing(task);
  try {
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.task(task.id),
        UpdateExpression: 'SET gsi1pk = :g1pk, gsi1sk = :g1sk, gsi2pk = :g2pk, gsi2sk = :g2sk',
        ConditionExpression: 'version = :v',
        ExpressionAttributeValues: {
          ':g1pk': k.gsi1pk,
          ':g1sk': k.gsi1sk,
          ':g2pk': k.gsi2pk,
          ':g2sk': k.gsi2sk,
          ':v': task.version,
        },
      }),
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}
