import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { afterEach, describe, expect, it } from 'vitest';
import { asFunction, CALL_LOG_VARIABLE, currentFunction, describeCall, recordCalls } from './call-record.ts';

const saved = { ...process.env };
afterEach(() => {
  process.env = { ...saved };
});

describe('describeCall', () => {
  it('names the table, the index and the partition prefixes of item calls', () => {
    process.env.TABLE_NAME = 'tocsin';
    expect(
      describeCall('DynamoDB', 'GetItem', { TableName: 'tocsin', Key: { pk: 'TASK#7', sk: 'TASK' } }),
    ).toEqual([{ action: 'dynamodb:GetItem', resource: 'table', keys: ['TASK#'] }]);
    expect(
      describeCall('DynamoDB', 'Query', {
        TableName: 'tocsin',
        IndexName: 'gsi1',
        KeyConditionExpression: '#p = :p AND begins_with(gsi1sk, :s)',
        ExpressionAttributeNames: { '#p': 'gsi1pk' },
        ExpressionAttributeValues: { ':p': 'DEPTS', ':s': 'DEPT#' },
      }),
    ).toEqual([{ action: 'dynamodb:Query', resource: 'table/index/gsi1', keys: ['DEPTS'] }]);
    expect(describeCall('DynamoDB', 'Scan', { TableName: 'tocsin' })).toEqual([
      { action: 'dynamodb:Scan', resource: 'table' },
    ]);
  });

  it('takes a batch as one authorization with every key, a transaction item by item', () => {
    process.env.TABLE_NAME = 'tocsin';
    expect(
      describeCall('DynamoDB', 'BatchWriteItem', {
        RequestItems: {
          tocsin: [
            { PutRequest: { Item: { pk: 'ALOG#1#2', sk: 'x' } } },
            { DeleteRequest: { Key: { pk: { S: 'WHLOG#1#2' }, sk: { S: 'y' } } } },
            { PutRequest: { Item: { pk: 'ALOG#3#4', sk: 'z' } } },
          ],
        },
      }),
    ).toEqual([{ action: 'dynamodb:BatchWriteItem', resource: 'table', keys: ['ALOG#', 'WHLOG#'] }]);
    expect(
      describeCall('DynamoDB', 'TransactWriteItems', {
        TransactItems: [
          { Put: { TableName: 'tocsin', Item: { pk: 'TASK#1', sk: 'TASK' } } },
          { Put: { TableName: 'tocsin', Item: { pk: 'TASKNAME#a', sk: 'TASKNAME' } } },
          { ConditionCheck: { TableName: 'tocsin', Key: { pk: 'WF#2', sk: 'WF' } } },
        ],
      }),
    ).toEqual([
      { action: 'dynamodb:PutItem', resource: 'table', keys: ['TASK#'] },
      { action: 'dynamodb:PutItem', resource: 'table', keys: ['TASKNAME#'] },
      { action: 'dynamodb:ConditionCheckItem', resource: 'table', keys: ['WF#'] },
    ]);
  });

  it('reads the partition key of a PartiQL statement from its parameters or its text', () => {
    process.env.TABLE_NAME = 'tocsin';
    expect(
      describeCall('DynamoDB', 'BatchExecuteStatement', {
        Statements: [
          {
            Statement: `INSERT INTO "tocsin" VALUE {'sk': ?, 'pk': ?, 'n': ?}`,
            Parameters: ['ALARM', 'ALARM#1#u', 1],
          },
          {
            Statement: `SELECT * FROM "tocsin"."gsi1" WHERE gsi1pk = 'X' AND pk = ?`,
            Parameters: ['TASK#3'],
          },
          { Statement: `DELETE FROM "tocsin" WHERE pk = 'DUE#1' AND sk = ?`, Parameters: ['s'] },
        ],
      }),
    ).toEqual([
      { action: 'dynamodb:PartiQLInsert', resource: 'table', keys: ['ALARM#'] },
      { action: 'dynamodb:PartiQLSelect', resource: 'table/index/gsi1', keys: ['TASK#'] },
      { action: 'dynamodb:PartiQLDelete', resource: 'table', keys: ['DUE#'] },
    ]);
  });

  it('names queues, dead-letter queues, secrets and the providers’ targets', () => {
    Object.assign(process.env, {
      ALARM_QUEUE_URL: 'http://q/alarm',
      NOTIFY_DLQ_URL: 'http://q/notify-dlq',
      SEAL_KEY_SECRET_ARN: 'arn:seal',
      NOTIFY_SECRETS_ARN: 'arn:notify',
      OIDC_CLIENT_SECRET_ARN: 'arn:sso',
    });
    expect(describeCall('SQS', 'SendMessageBatch', { QueueUrl: 'http://q/alarm' })).toEqual([
      { action: 'sqs:SendMessage', resource: 'queue/alarm' },
    ]);
    expect(describeCall('SQS', 'ChangeMessageVisibilityBatch', { QueueUrl: 'http://q/notify-dlq' })).toEqual([
      { action: 'sqs:ChangeMessageVisibility', resource: 'dlq/notify' },
    ]);
    expect(describeCall('SecretsManager', 'GetSecretValue', { SecretId: 'arn:notify' })).toEqual([
      { action: 'secretsmanager:GetSecretValue', resource: 'secret/notify-providers' },
    ]);
    expect(describeCall('SecretsManager', 'GetSecretValue', { SecretId: 'arn:sso' })).toEqual([
      { action: 'secretsmanager:GetSecretValue', resource: 'secret/sso-client' },
    ]);
    expect(describeCall('SNS', 'Publish', { PhoneNumber: '+86138' })).toEqual([
      { action: 'sns:Publish', resource: 'sns/phone' },
    ]);
    expect(describeCall('SESv2', 'SendEmail', { FromEmailAddress: 'a@b.c' })).toEqual([
      { action: 'ses:SendEmail', resource: 'ses/a@b.c' },
    ]);
  });
});

/** A document client whose calls never leave the process (answered by a last middleware). */
function offlineClient(): DynamoDBDocumentClient {
  const client = new DynamoDBClient({
    region: 'us-east-1',
    credentials: { accessKeyId: 'a', secretAccessKey: 'b' },
  });
  recordCalls(client);
  client.middlewareStack.add(() => async () => ({ output: { $metadata: {} } as never, response: {} }), {
    step: 'initialize',
    priority: 'low',
    name: 'answer',
  });
  return DynamoDBDocumentClient.from(client);
}

describe('recordCalls', () => {
  it('adds nothing to a client while recording is off, and asFunction just runs its work', async () => {
    delete process.env[CALL_LOG_VARIABLE];
    const client = new DynamoDBClient({ region: 'us-east-1' });
    const before = client.middlewareStack.identify().length;
    recordCalls(client);
    expect(client.middlewareStack.identify()).toHaveLength(before);
    expect(asFunction('GET /x', () => currentFunction())).toBeUndefined();
  });

  it('writes one line per authorization of the calls made as a function, none outside any', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'calls-'));
    try {
      Object.assign(process.env, { [CALL_LOG_VARIABLE]: join(dir, 'calls.jsonl'), TABLE_NAME: 'tocsin' });
      const doc = offlineClient();
      await doc.send(new GetCommand({ TableName: 'tocsin', Key: { pk: 'APP#1', sk: 'APP' } }));
      await asFunction('PUT /alarmtask/update', () =>
        doc.send(
          new TransactWriteCommand({
            TransactItems: [
              { Put: { TableName: 'tocsin', Item: { pk: 'TASK#1', sk: 'TASK' } } },
              { Delete: { TableName: 'tocsin', Key: { pk: 'TASKNAME#a', sk: 'TASKNAME' } } },
            ],
          }),
        ),
      );
      const lines = readFileSync(join(dir, 'calls.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(lines).toEqual([
        {
          fn: 'PUT /alarmtask/update',
          op: 'TransactWriteItems',
          action: 'dynamodb:PutItem',
          resource: 'table',
          keys: ['TASK#'],
        },
        {
          fn: 'PUT /alarmtask/update',
          op: 'TransactWriteItems',
          action: 'dynamodb:DeleteItem',
          resource: 'table',
          keys: ['TASKNAME#'],
        },
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
