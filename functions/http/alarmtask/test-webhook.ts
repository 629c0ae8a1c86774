import { testWebhookSchema } from '#shared/domain/deliveries/schemas.ts';
import { type TestWebhookInput, testWebhook } from '#shared/domain/deliveries/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { WebhookTested } from '#shared/domain/deliveries/responses.ts';

/** POST /alarmtask/webhook/test {uid, task_id}: a PING to the task's webhook now, and its attempt. */
export const handler = httpHandler<TestWebhookInput, WebhookTested>(
  { auth: 'reader', grant: 'operate', input: 'json', schema: testWebhookSchema },
  (input) => testWebhook(input),
);
