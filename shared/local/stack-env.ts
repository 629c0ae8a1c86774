import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { advanceClock } from '../clock.ts';
import { defaultStateFile } from './paths.ts';
import { useLocalPlatform } from './platform.ts';
import type { LocalStackState } from './stack.ts';

/**
 * Points this process at a running local stack (`npm start`), found through the state file it
 * wrote: --state, else TOCSIN_STATE_FILE, else .tocsin-local.json in the project root, and onto its
 * clock (its test clock may have been moved forward). Used by the command-line tools (`npm run
 * admin`, `npm run invoke`), which run outside the stack.
 */
export async function useLocalStack(stateOption?: string): Promise<LocalStackState> {
  const stateFile = resolve(stateOption || process.env.TOCSIN_STATE_FILE || defaultStateFile);
  if (!existsSync(stateFile)) {
    throw new Error(`no running local stack (no ${stateFile}); run \`npm start\` first`);
  }
  const state = JSON.parse(readFileSync(stateFile, 'utf8')) as LocalStackState;
  useLocalPlatform();
  Object.assign(process.env, {
    TABLE_NAME: state.tableName,
    AWS_REGION: state.region,
    DYNAMODB_ENDPOINT: state.dynamoEndpoint,
    SQS_ENDPOINT: state.sqsEndpoint,
    ALARM_QUEUE_URL: state.queueUrls.alarm,
    WEBHOOK_QUEUE_URL: state.queueUrls.webhook,
    NOTIFY_QUEUE_URL: state.queueUrls.notify,
    REPLAY_QUEUE_URL: state.queueUrls.replay,
    ...(state.dlqUrls
      ? {
          ALARM_DLQ_URL: state.dlqUrls.alarm,
          WEBHOOK_DLQ_URL: state.dlqUrls.webhook,
          NOTIFY_DLQ_URL: state.dlqUrls.notify,
          REPLAY_DLQ_URL: state.dlqUrls.replay,
        }
      : {}),
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    SEAL_KEY: state.sealKey,
    TOCSIN_LOCAL: '1',
    // As the local stack: the outbound URL guard is off unless asked for.
    BLOCK_PRIVATE_WEBHOOKS: process.env.BLOCK_PRIVATE_WEBHOOKS ?? '0',
    ENV_NAME: process.env.ENV_NAME ?? 'local',
  });
  const clock = (await (await fetch(`${state.url}/_local/clock`)).json()) as {
    data: { offset_seconds: number };
  };
  advanceClock(clock.data.offset_seconds);
  return state;
}
