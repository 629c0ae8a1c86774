import { randomBytes } from 'node:crypto';
import { CreateTableCommand, DeleteTableCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, describe, expect, it, inject } from 'vitest';
import { table } from '../../shared/contracts/table.ts';
import { db } from '../../shared/db/client.ts';
import { ensureTable, localDynamoClient } from '../../shared/local/dynamo.ts';

describe('the local table gains a missing index', () => {
  const name = `gsi-migration-${randomBytes(4).toString('hex')}`;
  const client = localDynamoClient(inject('stack').dynamoEndpoint, inject('stack').region);

  afterAll(async () => {
    await client.send(new DeleteTableCommand({ TableName: name })).catch(() => undefined);
    client.destroy();
  });

  it('adds gsi2 to a table persisted with gsi1 only, filled from its items', async () => {
    // Arrange: the table as an earlier version created it, with an item that has gsi2 keys.
    await client.send(
      new CreateTableCommand({
        TableName: name,
        BillingMode: 'PAY_PER_REQUEST',
        AttributeDefinitions: ['pk', 'sk', 'gsi1pk', 'gsi1sk'].map((a) => ({
          AttributeName: a,
          AttributeType: 'S',
        })),
        KeySchema: [
          { AttributeName: 'pk', KeyType: 'HASH' },
          { AttributeName: 'sk', KeyType: 'RANGE' },
        ],
        GlobalSecondaryIndexes: [
          {
            IndexName: 'gsi1',
            KeySchema: [
              { AttributeName: 'gsi1pk', KeyType: 'HASH' },
              { AttributeName: 'gsi1sk', KeyType: 'RANGE' },
            ],
            Projection: { ProjectionType: 'ALL' },
          },
        ],
      }),
    );
    await db().send(
      new PutCommand({ TableName: name, Item: { pk: 'A', sk: 'B', gsi2pk: 'LISTED', gsi2sk: '1', x: 1 } }),
    );
    // Act
    await ensureTable(client, name);
    // Assert
    const described = await client.send(new DescribeTableCommand({ TableName: name }));
    expect(described.Table?.GlobalSecondaryIndexes?.map((g) => g.IndexName).sort()).toEqual(
      table.globalSecondaryIndexes.map((g) => g.indexName).sort(),
    );
    const found = await db().send(
      new QueryCommand({
        TableName: name,
        IndexName: 'gsi2',
        KeyConditionExpression: 'gsi2pk = :p',
        ExpressionAttributeValues: { ':p': 'LISTED' },
      }),
    );
    expect(found.Items).toEqual([{ pk: 'A', sk: 'B', gsi2pk: 'LISTED', gsi2sk: '1', x: 1 }]);
    // An item written after the change is indexed too: DynamoDB Local's writes see the new description
    // at once (its launcher keeps parsed descriptions by their bytes: dynamo/TableDescriptionMemo.java).
    await db().send(
      new PutCommand({ TableName: name, Item: { pk: 'C', sk: 'D', gsi2pk: 'LISTED', gsi2sk: '2' } }),
    );
    const after = await db().send(
      new QueryCommand({
        TableName: name,
        IndexName: 'gsi2',
        KeyConditionExpression: 'gsi2pk = :p',
        ExpressionAttributeValues: { ':p': 'LISTED' },
      }),
    );
    expect(after.Items?.map((i) => i.pk)).toEqual(['A', 'C']);
  });
});
