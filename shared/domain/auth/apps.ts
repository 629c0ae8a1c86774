import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { randomInt } from 'node:crypto';
import { nowSeconds } from '../../clock.ts';
import { db, isConditionFailure, SCHEMA_VERSION, tableName } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import { seal, unseal } from './seal.ts';
import { newToken } from './signature.ts';

export interface App {
  id: number;
  name: string;
  token: string;
  created_at: number;
}

/** AP: get an app by id (token unsealed). */
export async function getApp(id: number): Promise<App | undefined> {
  const out = await db().send(new GetCommand({ TableName: tableName(), Key: keys.app(id) }));
  if (!out.Item) return undefined;
  return {
    id: out.Item.id,
    name: out.Item.name,
    token: unseal(out.Item.token_sealed),
    created_at: out.Item.created_at,
  };
}

/** AP: upsert an app (admin); with `onlyNew`, fails when the id is taken. */
export async function putApp(
  app: { id: number; name: string; token: string; created_at?: number },
  onlyNew = false,
): Promise<void> {
  await db().send(
    new PutCommand({
      TableName: tableName(),
      Item: {
        ...keys.app(app.id),
        entity: 'app',
        schema_version: SCHEMA_VERSION,
        id: app.id,
        name: app.name,
        token_sealed: seal(app.token),
        created_at: app.created_at ?? nowSeconds(),
      },
      ConditionExpression: onlyNew ? 'attribute_not_exists(pk)' : undefined,
    }),
  );
}

/** Creates an app with a fresh random id and a 40-hex CSPRNG token; the token is returned once. */
export async function createApp(name: string): Promise<App> {
  for (;;) {
    const app = { id: randomInt(100_000, 10_000_000), name, token: newToken(), created_at: nowSeconds() };
    try {
      await putApp(app, true);
      return app;
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
    }
  }
}
