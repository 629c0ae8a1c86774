import { TransactWriteCommand, type TransactWriteCommandInput } from '@aws-sdk/lib-dynamodb';
import { db, SCHEMA_VERSION, tableName } from '../../db/client.ts';
import { keys, shardOf, WF_COUNT_SHARDS } from '../../db/keys.ts';
import { type DueItem, dueKey } from '../due/repository.ts';
import type { CountDelta } from './model.ts';
import { cancellationCodes } from './repository.ts';

/**
 * The workflow counts of a task (`WFCOUNT#`, read by GET /workflow/counts): counter items, sharded so
 * that a busy task's moves spread over several items, each changed only by the transaction that
 * settles an announcement's count moves (AP-F12, KEY-DESIGN.md).
 */
type TransactItem = NonNullable<TransactWriteCommandInput['TransactItems']>[number];

/** The counter item of a workflow's task that counts it. */
export const countShardOf = (workflowId: number) => shardOf(String(workflowId), WF_COUNT_SHARDS);

/**
 * AP-F12: apply the count moves an announcement carries, exactly once: one transaction that marks the
 * outbox item's payload `counted` (condition: it exists and is not marked yet; in the payload, so an
 * announcement buried as dead due work and redriven keeps it) and ADDs each delta to its counter item. `done` when they were applied before (or the item is gone: it is deleted only after
 * its counts); `conflict` when a concurrent transaction touched one of the items (try again).
 */
export async function applyWorkflowCounts(
  outbox: Pick<DueItem, 'kind' | 'ref' | 'due_at'>,
  deltas: CountDelta[],
): Promise<'applied' | 'done' | 'conflict'> {
  const items: TransactItem[] = [
    {
      Update: {
        TableName: tableName(),
        Key: dueKey(outbox),
        UpdateExpression: 'SET #p.#c = :true',
        ConditionExpression: 'attribute_exists(pk) AND attribute_not_exists(#p.#c)',
        ExpressionAttributeNames: { '#p': 'payload', '#c': 'counted' },
        ExpressionAttributeValues: { ':true': true },
      },
    },
    ...deltas.map((d): TransactItem => {
      const fields = Object.entries(d.delta);
      return {
        Update: {
          TableName: tableName(),
          Key: keys.workflowCount(d.task_id, d.shard),
          UpdateExpression: `ADD ${fields.map(([f]) => `#${f} :${f}`).join(', ')} SET entity = :e, schema_version = :sv, task_id = :t`,
          ExpressionAttributeNames: Object.fromEntries(fields.map(([f]) => [`#${f}`, f])),
          ExpressionAttributeValues: {
            ...Object.fromEntries(fields.map(([f, n]) => [`:${f}`, n])),
            ':e': 'workflow_count',
            ':sv': SCHEMA_VERSION,
            ':t': d.task_id,
          },
        },
      };
    }),
  ];
  try {
    await db().send(new TransactWriteCommand({ TransactItems: items }));
    return 'applied';
  } catch (err) {
    const codes = cancellationCodes(err);
    if (codes?.[0] === 'ConditionalCheckFailed') return 'done';
    if (codes?.some((c) => c === 'TransactionConflict')) return 'conflict';
    if ((err as { name?: string }).name === 'TransactionConflictException') return 'conflict';
    throw err;
  }
}
