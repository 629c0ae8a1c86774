import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getAlarmRecord } from '../../shared/domain/alarms/repository.ts';
import { nowSeconds } from '../../shared/clock.ts';
import { handlerOf, signEvent } from '../../shared/local/invoke.ts';
import { lambdaContext, loadHandler } from '../../shared/local/lambda.ts';
import { projectRoot } from '../../shared/local/paths.ts';
import { TestReceiver } from '../support/receiver.ts';
import { createTask } from '../support/tasks.ts';

/**
 * `npm run invoke` runs one handler in-process on a sample event from events/ against the local
 * stack's table and queues; here the same thing is done in the test process (configured like the
 * stack's handlers): the samples are real events the handlers accept.
 */
const receiver = new TestReceiver();
beforeAll(() => receiver.start());
afterAll(() => receiver.stop());

const sample = (file: string) => JSON.parse(readFileSync(join(projectRoot, 'events', file), 'utf8'));

async function invoke(name: string, event: unknown) {
  const handler = await loadHandler(handlerOf(name).file);
  return handler(event, lambdaContext(`tocsin-${name}`));
}

describe('handlers invoked by hand on the sample events', () => {
  it('GET /health answers 200', async () => {
    const res = await invoke('GetHealth', sample('http/GetHealth.json'));
    expect(res.statusCode).toBe(200);
    expect(JSON.parse(res.body)).toMatchObject({ code: 0, msg: 'ok' });
  });

  it('POST /alarm/report, signed afresh, queues an alarm that reaches the webhook', async () => {
    const task = await createTask({ receiver: { channels: { email: [1], webhook: receiver.url } } });
    const event = signEvent(
      sample('http/PostAlarmReport.json'),
      handlerOf('PostAlarmReport').route,
      { alarm: [task.id, task.token] },
      nowSeconds(),
    );
    const res = await invoke('PostAlarmReport', event);
    const body = JSON.parse(res.body);
    expect([res.statusCode, body.code]).toEqual([200, 0]);
    await receiver.waitFor((all) => all.some((r) => r.json?.data?.history?.uuid === body.data.uuid));
  });

  it('the alarm consumer processes its sample batch for an existing task', async () => {
    const task = await createTask();
    const event = sample('sqs/process-alarm.json');
    const message = JSON.parse(event.Records[0].body);
    message.task_id = task.id;
    message.uuid = crypto.randomUUID();
    event.Records[0].body = JSON.stringify(message);
    const res = await invoke('process-alarm', event);
    expect(res).toEqual({ batchItemFailures: [] });
    expect((await getAlarmRecord(task.id, message.uuid))?.outcome).toBe('compress_disable');
  });
});
