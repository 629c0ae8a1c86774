import { GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { db, tableName } from '../../../shared/db/client.ts';
import { keys } from '../../../shared/db/keys.ts';
import { importDirectory } from '../../../shared/domain/directory/service.ts';
import { setPasswordByOperator } from '../../../shared/domain/signin/signin.ts';
import { api, taskAuth } from '../../support/client.ts';
import { Browser } from '../../support/people.ts';
import { TestReceiver } from '../../support/receiver.ts';
import { type CreatedTask, createTask } from '../../support/tasks.ts';
import { newWorkflow } from '../../support/workflows.ts';

/** The fuzz test's targets (a task, a workflow, a signed-in person) and their stored state. */

export const hook = new TestReceiver();
export let task: CreatedTask;
export let workflowId = 0;
/** An on-call schedule (user 1 may change it; user 5 may not read it). */
export let scheduleId = 0;
export const FUZZ_UID = 7777;
export const FUZZ_PASSWORD = 'fuzz target password';
/** The fuzz target's signed-in browser (the routes of a signed-in person). */
export const person = new Browser();

export const taskAuthNow = async () => taskAuth(task);

/** Creates the targets (once, before the fuzz). */
export async function prepareTargets(): Promise<void> {
  await hook.start();
  await importDirectory({
    users: [
      {
        uid: FUZZ_UID,
        username: 'Fuzz Target',
        user: 'fuzz',
        email: 'fuzz@example.com',
        phone: '13800007777',
      },
    ],
  });
  // The fuzz target signs in (its own routes: sign out, its password).
  await setPasswordByOperator(FUZZ_UID, FUZZ_PASSWORD);
  if ((await person.signIn('fuzz', FUZZ_PASSWORD)).json.code !== 0) throw new Error('fuzz sign-in failed');
  task = await createTask({ receiver: { channels: { email: [1], webhook: `${hook.url}/fuzz` } } });
  // The adapters' fixed signature is on for this task (it is off by default).
  await api.put('/alarmtask/intake', { ...(await taskAuth(task)), fixed_sign: 1 });
  workflowId = (await newWorkflow(task)).id;
  const schedule = await api.post('/schedule/store', {
    uid: 1,
    name: 'fuzz schedule',
    department_id: 1,
    time_zone: 'UTC',
    layers: [{ name: 'l', start: '2026-01-01T09:00', turn: { every: 1, unit: 'day' }, users: [1, 2] }],
  });
  scheduleId = schedule.data.schedule.id;
  // The task's PING and the workflow's `generated` event arrive before the fuzz starts.
  await hook.waitFor(
    (all) => all.some((r) => r.json?.event === 'PING') && all.some((r) => r.json?.type === 'generated'),
  );
}

/** Everything a hostile request must leave unchanged. */
export async function snapshot() {
  const item = async (key: Record<string, string>) =>
    (await db().send(new GetCommand({ TableName: tableName(), Key: key, ConsistentRead: true }))).Item;
  const perms = await db().send(
    new QueryCommand({
      TableName: tableName(),
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': keys.task(task.id).pk },
      ConsistentRead: true,
    }),
  );
  return {
    task: await item(keys.task(task.id)),
    taskPartition: perms.Items,
    workflow: await item(keys.workflow(workflowId)),
    user: await item(keys.user(FUZZ_UID)),
    // The fuzz target's password and sign-out stamp: no hostile request signs it out or changes it.
    credential: await item(keys.userCredential(FUZZ_UID)),
    // The schedule, its versions and overrides.
    schedule: (
      await db().send(
        new QueryCommand({
          TableName: tableName(),
          KeyConditionExpression: 'pk = :pk',
          ExpressionAttributeValues: { ':pk': keys.schedulePartition(scheduleId) },
          ConsistentRead: true,
        }),
      )
    ).Items,
  };
}
