import { inject } from 'vitest';
import { resetConfig } from '../../shared/config/env.ts';
import { useLocalPlatform } from '../../shared/local/platform.ts';
import { checkingFetch, watchApi } from './openapi-check.ts';

/**
 * Test workers talk to the stack over HTTP, and some read the table or queues directly to check
 * what was stored: give them the same configuration the stack's handlers run with.
 */
const stack = inject('stack');
Object.assign(process.env, {
  AWS_REGION: stack.region,
  AWS_ACCESS_KEY_ID: 'local',
  AWS_SECRET_ACCESS_KEY: 'local',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  TABLE_NAME: stack.tableName,
  DYNAMODB_ENDPOINT: stack.dynamoEndpoint,
  SQS_ENDPOINT: stack.sqsEndpoint,
  ALARM_QUEUE_URL: stack.queueUrls.alarm,
  WEBHOOK_QUEUE_URL: stack.queueUrls.webhook,
  NOTIFY_QUEUE_URL: stack.queueUrls.notify,
  SEAL_KEY: stack.sealKey,
  TOCSIN_LOCAL: '1',
  LOG_LEVEL: 'ERROR',
});
resetConfig();
useLocalPlatform();

// Every answer of the stack is checked against the OpenAPI document (test/support/openapi-check.ts).
watchApi(stack.url);
globalThis.fetch = checkingFetch(globalThis.fetch);
