import { App } from 'aws-cdk-lib';
import { TocsinStack } from './stack.ts';

/**
 * `npx cdk synth|deploy [-c envName=staging] [-c legacySign=false] [-c reportTimeZone=Asia/Shanghai]`.
 * The target account/region come from the CLI profile (CDK_DEFAULT_ACCOUNT / CDK_DEFAULT_REGION).
 */
const app = new App();

function context(name: string): string | undefined {
  const value = app.node.tryGetContext(name);
  return value === undefined || value === null || value === '' ? undefined : String(value);
}

function flag(name: string, fallback: boolean): boolean {
  const value = context(name);
  if (value === undefined) return fallback;
  if (['1', 'true', 'yes'].includes(value.toLowerCase())) return true;
  if (['0', 'false', 'no'].includes(value.toLowerCase())) return false;
  throw new Error(`context ${name} must be true or false`);
}

const envName = context('envName') ?? 'production';
if (!/^[a-z][a-z0-9-]{0,30}$/.test(envName)) throw new Error('context envName must match [a-z][a-z0-9-]*');

new TocsinStack(app, `Tocsin-${envName}`, {
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
  description: `tocsin alarm task management service (${envName})`,
  envName,
  legacySign: flag('legacySign', true),
  reportTimeZone: context('reportTimeZone') ?? 'UTC',
  logLevel: context('logLevel') ?? 'INFO',
  skipBundling: flag('skipBundling', false),
});

app.synth();
