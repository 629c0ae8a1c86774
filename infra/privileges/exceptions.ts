import type { Exception } from './check.ts';

/**
 * Grants the integration suite cannot show in use, each with why. Keep it short: a path the suite can
 * reach gets a test instead.
 */
export const EXCEPTIONS: readonly Exception[] = [
  {
    action: 'sqs:GetQueueAttributes',
    resource: 'queue/*',
    reason:
      "Lambda's event source mapping reads the queue's attributes with the consumer's role (AWS lists " +
      'ReceiveMessage, DeleteMessage and GetQueueAttributes as what it needs); the local poller that stands ' +
      'in for it has no need to.',
  },
  {
    action: 'xray:Put*',
    reason:
      'Active tracing: the Lambda runtime sends the trace segments with the function role, not the ' +
      "service's SDK clients, and there is no X-Ray locally.",
  },
];
