import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { randomInt } from 'node:crypto';
import { nowSeconds } from '../../clock.ts';
import { db, isConditionFailure, SCHEMA_VERSION, tableName } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import { NotFoundError } from '../errors.ts';
import { seal, unseal } from './seal.ts';
import { newToken } from './signature.ts';

/**
 * What an app may do beyond the interface's routes (which every app may call):
 * - `read`: the read routes (history, traces, deliveries, stats, task and workflow lists, task view,
 *   status, test-send, template preview) as the user the request names (`uid`), within that user's
 *   permissions;
 * - `admin`: `read`, and the super administrator's powers whoever the named user is: every task,
 *   dead letters and their redrive.
 */
export const GRANTS = ['read', 'admin'] as const;
export type Grant = (typeof GRANTS)[number];

export const isGrant = (v: string): v is Grant => (GRANTS as readonly string[]).includes(v);

export interface App {
  id: number;
  name: string;
  token: string;
  created_at: number;
  grants: Grant[];
}

/** AP-A1: get an app by id (token unsealed, grants sorted). */
export async function getApp(id: number): Promise<App | undefined> {
  const out = await db().send(new GetCommand({ TableName: tableName(), Key: keys.app(id) }));
  if (!out.Item) return undefined;
  const grants = out.Item.grants instanceof Set ? [...(out.Item.grants as Set<string>)] : [];
  return {
    id: out.Item.id,
    name: out.Item.name,
    token: unseal(out.Item.token_sealed),
    created_at: out.Item.created_at,
    grants: grants.filter(isGrant).sort(),
  };
}

/**
 * AP-A2: upsert an app (admin); with `onlyNew`, fails when the id is taken. An update keeps the app's
 * grants (a directory re-import never takes them away).
 */
export async function putApp(
  app: { id: number; name: string; token: string; created_at?: number },
  onlyNew = false,
): Promise<void> {
  await db().send(
    new UpdateCommand({
      TableName: tableName(),
      Key: keys.app(app.id),
      UpdateExpression:
        'SET entity = :e, schema_version = :v, id = :id, #name = :name, token_sealed = :t, created_at = if_not_exists(created_at, :c)',
      ExpressionAttributeNames: { '#name': 'name' },
      ExpressionAttributeValues: {
        ':e': 'app',
        ':v': SCHEMA_VERSION,
        ':id': app.id,
        ':name': app.name,
        ':t': seal(app.token),
        ':c': app.created_at ?? nowSeconds(),
      },
      ConditionExpression: onlyNew ? 'attribute_not_exists(pk)' : undefined,
    }),
  );
}

/** Creates an app with a fresh random id and a 40-hex CSPRNG token; the token is returned once. */
export async function createApp(name: string): Promise<App> {
  for (;;) {
    const app = {
      id: randomInt(100_000, 10_000_000),
      name,
      token: newToken(),
      created_at: nowSeconds(),
      grants: [],
    };
    try {
      await putApp(app, true);
      return app;
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
    }
  }
}

/**
 * AP-A3: give (`ADD`) or take (`DELETE`) a grant; the app's grants after. Takes effect within the
 * app cache time of the running functions (30 s). 404 for an unknown app.
 */
export async function changeGrant(id: number, grant: Grant, give: boolean): Promise<Grant[]> {
  try {
    const out = await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.app(id),
        UpdateExpression: `${give ? 'ADD' : 'DELETE'} grants :g`,
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: { ':g': new Set([grant]) },
        ReturnValues: 'ALL_NEW',
      }),
    );
    const grants = out.Attributes?.grants instanceof Set ? [...(out.Attributes.grants as Set<string>)] : [];
    return grants.filter(isGrant).sort();
  } catch (err) {
    if (isConditionFailure(err)) throw new NotFoundError(`app [${id}] not found`);
    throw err;
  }
}
