import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { buildConsole } from '../../scripts/build-console.ts';
import { startLocalStack } from '../../shared/local/stack.ts';
import { startFakes } from './fakes.ts';
import { seedTestDirectory, TEST_APP } from './seed.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    stack: {
      url: string;
      region: string;
      tableName: string;
      dynamoEndpoint: string;
      sqsEndpoint: string;
      queueUrls: Record<string, string>;
      dlqUrls: Record<string, string>;
      sealKey: string;
      stateFile: string;
    };
    /** Notification provider fakes (test/support/fakes.ts): control URL, SMTP port, provider env. */
    fakes: { url: string; smtpPort: number; env: Record<string, string> };
  }
}

/**
 * Starts the real local stack once per run (DynamoDB Local + SQS emulator + HTTP API + pollers),
 * seeds the test directory and app, and always tears everything down (the JVM included).
 */
export default async function setup(project: TestProject) {
  // The web console's page (GET /console), as npm start builds it: the browser tests load it.
  await buildConsole();
  const dir = mkdtempSync(join(tmpdir(), 'tocsin-test-'));
  const stateFile = join(dir, 'state.json');
  // Provider fakes first: the stack's notification providers are pointed at them.
  const fakes = await startFakes();
  const stack = await startLocalStack({
    port: 0,
    dataDir: ':memory:',
    stateFile,
    // The test clock drives due work; the wall-clock timer would only add noise.
    schedule: false,
    env: {
      LOG_LEVEL: 'ERROR',
      WEBHOOK_BACKOFF_SECONDS: '1,1,1,1,1,1',
      NOTIFY_BACKOFF_SECONDS: '1,1,1,1,1,1',
      ALARM_RATE_LIMIT: '50',
      ...fakes.env,
    },
  }).catch(async (err) => {
    await fakes.stop();
    throw err;
  });
  const kill = () => void stack.stop();
  process.once('exit', kill);
  await seedTestDirectory();
  project.provide('stack', {
    url: stack.url,
    region: stack.region,
    tableName: stack.tableName,
    dynamoEndpoint: stack.dynamoEndpoint,
    sqsEndpoint: stack.sqsEndpoint,
    queueUrls: stack.queueUrls,
    dlqUrls: stack.dlqUrls,
    sealKey: stack.sealKey,
    stateFile,
  });
  project.provide('fakes', { url: fakes.url, smtpPort: fakes.smtpPort, env: fakes.env });
  return async () => {
    await stack.stop();
    await fakes.stop();
    process.off('exit', kill);
    rmSync(dir, { recursive: true, force: true });
  };
}

export { TEST_APP };
