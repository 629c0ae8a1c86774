import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { buildConsole } from '../../scripts/build-console.ts';
import { CALL_LOG_VARIABLE } from '../../shared/local/call-record.ts';
import { NOTIFY_SECRET_NAMES } from '../../shared/config/env.ts';
import { loadSealKey } from '../../shared/domain/auth/seal.ts';
import { startLocalStack } from '../../shared/local/stack.ts';
import { startFakeSecrets } from './fake-secrets.ts';
import { startFakes } from './fakes.ts';
import { OIDC_CLIENT, startOidcProvider } from './oidc.ts';
import { proveLeastPrivilege } from './least-privilege.ts';
import { seedTestDirectory, TEST_APP } from './seed.ts';
import { reportUnexpectedLog } from './stack-log.ts';

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
      /** Where the stack writes its log lines (test/support/stack-log.ts reads it). */
      logFile: string;
    };
    /** Notification provider fakes (test/support/fakes.ts): control URL, SMTP port, provider env. */
    fakes: { url: string; smtpPort: number; env: Record<string, string> };
    /** The OpenID Connect provider the stack's single sign-on uses (test/support/oidc.ts). */
    oidc: { issuer: string; clientId: string; clientSecret: string };
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
  // Every AWS call the stack's functions make is recorded (checked against their roles at the end;
  // TOCSIN_KEEP_CALL_LOG names a file to keep them in).
  const callLog = process.env.TOCSIN_KEEP_CALL_LOG || join(dir, 'aws-calls.jsonl');
  // The stack's log lines (errors only: LOG_LEVEL below) go to a file: a test that expects one asserts
  // it there (test/support/stack-log.ts); the others are printed when the run ends.
  const logFile = join(dir, 'stack.log');
  process.env[CALL_LOG_VARIABLE] = callLog;
  // Provider fakes first: the stack's notification providers are pointed at them.
  const fakes = await startFakes();
  const oidc = await startOidcProvider();
  // The seal key and the provider credentials come from Secrets Manager, as on AWS.
  const secrets = await startFakeSecrets();
  const notifySecrets = Object.fromEntries(
    Object.entries(fakes.env).filter(([k]) => (NOTIFY_SECRET_NAMES as readonly string[]).includes(k)),
  );
  secrets.set(NOTIFY_SECRETS_ARN, JSON.stringify(notifySecrets));
  // ...and single sign-on's client secret (read by its two functions only).
  secrets.set(SSO_SECRET_ARN, OIDC_CLIENT.secret);
  const stack = await startLocalStack({
    port: 0,
    dataDir: ':memory:',
    stateFile,
    // The test clock drives due work; the wall-clock timer would only add noise.
    schedule: false,
    env: {
      LOG_LEVEL: 'ERROR',
      TOCSIN_LOG_FILE: logFile,
      WEBHOOK_BACKOFF_SECONDS: '1,1,1,1,1,1',
      NOTIFY_BACKOFF_SECONDS: '1,1,1,1,1,1',
      ALARM_RATE_LIMIT: '50',
      // Other suites move the service clock by up to a day: sessions outlive that (the sign-in suite
      // crosses these limits on purpose).
      SESSION_IDLE_MINUTES: '2880',
      SESSION_MAX_HOURS: '168',
      // Every suite's browser signs in from 127.0.0.1; the address throttle is tested from addresses
      // of its own (test/integration/sign-in.test.ts).
      SIGNIN_ADDRESS_MAX_FAILURES: '20',
      OIDC_ISSUER: oidc.issuer,
      OIDC_CLIENT_ID: OIDC_CLIENT.id,
      OIDC_CLIENT_SECRET_ARN: SSO_SECRET_ARN,
      ...Object.fromEntries(Object.entries(fakes.env).filter(([k]) => !(k in notifySecrets))),
      SEAL_KEY: '',
      SEAL_KEY_SECRET_ARN,
      NOTIFY_SECRETS_ARN,
      AWS_ENDPOINT_URL_SECRETS_MANAGER: secrets.url,
    },
  }).catch(async (err) => {
    await Promise.all([fakes.stop(), oidc.stop(), secrets.stop()]);
    throw err;
  });
  await oidc.configure(`${stack.url}/auth/oidc/callback`);
  secrets.set(SEAL_KEY_SECRET_ARN, stack.sealKey);
  await loadSealKey();
  // The stack's threads have their environment: tests (and the stacks some start) see the provider
  // credentials as plain variables, as before.
  delete process.env.NOTIFY_SECRETS_ARN;
  Object.assign(process.env, notifySecrets);
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
    logFile,
  });
  project.provide('fakes', { url: fakes.url, smtpPort: fakes.smtpPort, env: fakes.env });
  project.provide('oidc', {
    issuer: oidc.issuer,
    clientId: OIDC_CLIENT.id,
    clientSecret: OIDC_CLIENT.secret,
  });
  return async () => {
    await stack.stop();
    await Promise.all([fakes.stop(), oidc.stop(), secrets.stop()]);
    process.off('exit', kill);
    try {
      reportUnexpectedLog(logFile);
      await proveLeastPrivilege(project, callLog);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
}

const SEAL_KEY_SECRET_ARN = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:tocsin-seal-key';
const NOTIFY_SECRETS_ARN = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:tocsin-notify';
const SSO_SECRET_ARN = 'arn:aws:secretsmanager:us-east-1:000000000000:secret:tocsin-sso-client';

export { TEST_APP };
