import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { randomInt } from 'node:crypto';
import { nowSeconds } from '../../clock.ts';
import { db, isConditionFailure, SCHEMA_VERSION, tableName } from '../../db/client.ts';
import { keys } from '../../db/keys.ts';
import { NotFoundError } from '../errors.ts';
import { audit } from './audit.ts';
import { seal, unseal } from './seal.ts';
import { newToken } from './signature.ts';

/**
 * What an app may do beyond the interface's routes (which every app may call):
 * - `read`: the read routes (history, traces, deliveries, stats, task and workflow lists, task view,
 *   template preview) as the user the request names (`uid`), within that user's permissions; it
 *   changes nothing;
 * - `operate`: `read`, and the routes beyond the interface that change something as the named user
 *   (a task's status, a webhook test-send; the workflow operations an app makes for itself where the
 *   deployment requires a grant for them), within that user's permissions;
 * - `admin`: `operate`, and the super administrator's powers whoever the named user is: every task,
 *   dead letters and their redrive.
 */
export const GRANTS = ['read', 'operate', 'admin'] as const;
export type Grant = (typeof GRANTS)[number];

export const isGrant = (v: string): v is Grant => (GRANTS as readonly string[]).includes(v);

export interface App {
  id: number;
  name: string;
  token: string;
  created_at: number;
  grants: Grant[];
  /**
   * The users the app may act as (`uid`, `created_by`); empty: any user (`npm run admin -- app bind`).
   */
  uids: number[];
  /** Whether the app signs every request bound to it (request-signature.ts; `app signing`). */
  request_signature: boolean;
}

/** Whether `app` holds `grant`, or one that includes it (`admin` includes `operate`, which includes `read`). */
export function holds(app: Pick<App, 'grants'>, grant: Grant): boolean {
  return app.grants.some((g) => GRANTS.indexOf(g) >= GRANTS.indexOf(grant));
}

const numbers = (v: unknown): number[] => (v instanceof Set ? [...(v as Set<number>)].map(Number) : []);

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
    uids: numbers(out.Item.bound_uids).sort((a, b) => a - b),
    request_signature: out.Item.request_signature === true,
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
      uids: [],
      request_signature: false,
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
    audit('grant-change', { app: id, grant, given: give });
    return grants.filter(isGrant).sort();
  } catch (err) {
    if (isConditionFailure(err)) throw new NotFoundError(`app [${id}] not found`);
    throw err;
  }
}

/**
 * AP-A4: bind an app to the users it may act as (`uids`; an empty list unbinds it: any user), or
 * turn its request-bound signature on or off. 404 for an unknown app. Like a grant, a change reaches
 * the running functions within the app cache time (30 s).
 */
export async function changeApp(
  id: number,
  change: { uids: number[] } | { requestSignature: boolean },
): Promise<void> {
  const binding = 'uids' in change;
  const set = binding && change.uids.length > 0;
  try {
    await db().send(
      new UpdateCommand({
        TableName: tableName(),
        Key: keys.app(id),
        UpdateExpression: binding
          ? set
            ? 'SET bound_uids = :u'
            : 'REMOVE bound_uids'
          : 'SET request_signature = :r',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: binding
          ? set
            ? { ':u': new Set(change.uids) }
            : undefined
          : { ':r': change.requestSignature },
      }),
    );
  } catch (err) {
    if (isConditionFailure(err)) throw new NotFoundError(`app [${id}] not found`);
    throw err;
  }
  if (binding) audit('app-binding', { app: id, uids: change.uids });
  else audit('app-signature', { app: id, request_signature: change.requestSignature });
}
