import { testWebhookSchema } from '#shared/domain/deliveries/schemas.ts';
import { type TestWebhookInput, testWebhook } from '#shared/domain/deliveries/service.ts';
import { httpHandler } from '#shared/http/handler.ts';
import type { WebhookTested } from '#shared/domain/deliveries/responses.ts';
import { reader } from '#shared/http/auth/reader.ts';
import { jsonBody } from '#shared/http/input.ts';
import { validate } from '#shared/generated/validators/routes/http/alarmtask/test-webhook.ts';

/** POST /alarmtask/webhook/test {uid, task_id}: a PING to the task's webhook now, and its attempt. */
export const handler = httpHandler<TestWebhookInput, WebhookTested>(
  { auth: reader({ grant: 'operate' }), input: jsonBody, schema: testWebhookSchema, validate },
  (input) => testWebhook(input),
);
