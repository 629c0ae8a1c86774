import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import type { CallRecord } from '../../shared/local/call-record.ts';
import { PROJECT_ROOT, TocsinStack } from '../stack.ts';
import { type CheckReport, checkLeastPrivilege } from './check.ts';
import { EXCEPTIONS } from './exceptions.ts';
import { readTemplate, type TemplateJson } from './template.ts';

const ENV = { account: '123456789012', region: 'eu-west-1' };

/**
 * Single sign-on as the test stack has it (its two functions read the client secret): the settings
 * only decide whether the secret and its grants exist.
 */
const SINGLE_SIGN_ON = { issuer: 'https://sso.example.com', clientId: 'tocsin-console' };

/**
 * A production stack as `cdk synth -c envName=production` makes it, without bundling the code, with
 * single sign-on configured.
 */
export function synthProductionTemplate(): TemplateJson {
  const context = (
    JSON.parse(readFileSync(join(PROJECT_ROOT, 'cdk.json'), 'utf8')) as { context: Record<string, unknown> }
  ).context;
  const app = new App({ context });
  const stack = new TocsinStack(app, 'Tocsin-production', {
    env: ENV,
    envName: 'production',
    skipBundling: true,
    singleSignOn: SINGLE_SIGN_ON,
  });
  return app.synth().getStackByName(stack.stackName).template as TemplateJson;
}

export function readCallLog(file: string): CallRecord[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => JSON.parse(line) as CallRecord);
}

/** Checks the calls recorded in `file` against the roles of a synthesized production stack. */
export function checkCallLog(file: string, options: { unused: boolean }): CheckReport {
  const view = readTemplate(synthProductionTemplate(), ENV);
  return checkLeastPrivilege(readCallLog(file), view, { ...options, exceptions: EXCEPTIONS });
}

/** The report as text: the summary, then every finding. */
export function formatReport(report: CheckReport): string {
  return [
    report.summary,
    ...report.denied.map((d) => `  DENIED  ${d}`),
    ...report.unused.map((u) => `  UNUSED  ${u}`),
  ].join('\n');
}

// `node --import tsx infra/privileges/run.ts CALLS.jsonl [--unused]`: checks a kept call log.
if (process.argv[1]?.endsWith('infra/privileges/run.ts')) {
  const [file, flag] = process.argv.slice(2);
  const report = checkCallLog(file, { unused: flag === '--unused' });
  console.log(formatReport(report));
  process.exitCode = report.ok ? 0 : 1;
}
